"""``leader-epoch-checkpoint``: at which offset each leader epoch started.

This is what lets a replica that comes back after a leader change find the
point where its log diverged from the new leader's (OffsetForLeaderEpoch,
KIP-101/279) instead of trusting its high watermark. Entries are written to
disk whenever they change, which is rare: once per new epoch or truncation.

The file is replaced atomically but not fsynced: every entry for records in the log is
rebuilt from their batch headers each time the log is opened, and entries past the log end
are cut then, so nothing depends on the write reaching the disk first. A broker taking the
leadership of thousands of partitions at once then waits for no fsync per partition.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from brokerd.storage.checkpoint import CheckpointFile

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """Epochs in increasing order, each with the first offset written in it."""

    def __init__(self, directory: Path) -> None:
        self._checkpoint = CheckpointFile(directory / LEADER_EPOCH_CHECKPOINT, durable=False)
        self._entries = self._read()

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset``, dropping entries it contradicts."""
        if epoch < 0:
            return
        if self._entries:
            latest = self._entries[-1]
            if epoch == latest.epoch and start_offset >= latest.start_offset:
                return
        self._entries = [
            entry for entry in self._entries if entry.epoch < epoch and entry.start_offset < start_offset
        ]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._write()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(epoch, end offset)`` for the largest epoch <= the requested one.

        The end offset is where the next epoch started (or the log end for the
        latest epoch). An epoch older than everything known answers with the
        requested epoch and the first known start, as Kafka does, because
        that data is gone anyway.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [e for e in self._entries if e.epoch <= requested_epoch]
        if not floor:
            return requested_epoch, higher.start_offset
        return floor[-1].epoch, higher.start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after ``end_offset`` (the log was cut there)."""
        kept = [entry for entry in self._entries if entry.start_offset < end_offset]
        if kept != self._entries:
            self._entries = kept
            self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget epochs wholly before ``start_offset``; the one in force there now starts at it."""
        older = [entry for entry in self._entries if entry.start_offset <= start_offset]
        if not older:
            return
        kept = [EpochEntry(older[-1].epoch, start_offset)]
        kept += [entry for entry in self._entries if entry.start_offset > start_offset]
        if kept != self._entries:
            self._entries = kept
            self._write()

    def clear(self) -> None:
        if self._entries:
            self._entries = []
            self._write()

    def _read(self) -> list[EpochEntry]:
        """The checkpointed entries; none when there is no usable file (the log rebuilds them)."""
        try:
            return [EpochEntry(int(epoch), int(offset)) for epoch, offset in self._checkpoint.read() or []]
        except ValueError:
            return []

    def _write(self) -> None:
        self._checkpoint.write(self._entries)
