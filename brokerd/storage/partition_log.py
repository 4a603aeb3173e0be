"""The log of one partition replica, Kafka's ``UnifiedLog``: ``<data dir>/<topic>-<partition>/``.

Holds the ordered segments and the state derived from them (leader epoch
cache, producer state with open transactions, aborted-transaction indexes,
recovery point) and keeps them consistent through appends, reads, rolls,
truncation and retention.

Not thread-safe, on purpose: the broker drives every partition from its one
asyncio thread, so no call here ever overlaps another, and memoryviews
returned by ``read`` stay valid until the caller drops them.
"""

from __future__ import annotations

import bisect
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    UnsupportedForMessageFormatError,
)

from brokerd.storage.checkpoint import CheckpointFile, fsync_directory, write_atomically
from brokerd.storage.control_batch import build_end_txn_marker, read_end_txn_marker
from brokerd.storage.leader_epoch_cache import LeaderEpochFileCache
from brokerd.storage.log_cleaner import swap_in
from brokerd.storage.log_config import LogConfig
from brokerd.storage.log_loader import CLEAN_SHUTDOWN_FILE, load_segments, recovery_point_checkpoint
from brokerd.storage.log_retention import deletable_segment_count
from brokerd.storage.log_segment import LogSegment
from brokerd.storage.log_validator import (
    stamp_batch,
    validate_client_batch,
    validate_keys_for_compaction,
    validate_timestamps,
)
from brokerd.storage.producer_state import ProducerStateEntry, ProducerStateManager
from brokerd.storage.recompression import recompress, target_codec
from brokerd.storage.record_batch import (
    CURRENT_MAGIC,
    BatchHeader,
    ByteBuffer,
    crc_matches,
    iter_batch_headers,
)
from brokerd.storage.time_index import TimestampOffset
from brokerd.storage.transaction_index import AbortedTxn

_EMPTY = memoryview(b"")
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


def log_start_offset_checkpoint(directory: Path) -> CheckpointFile:
    """Where DeleteRecords' log start offset survives restarts (Kafka keeps one such file per
    data directory; one per partition keeps every partition's state inside its own directory)."""
    return CheckpointFile(directory / LOG_START_OFFSET_CHECKPOINT)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Where an append landed: what a ProduceResponse reports."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    duplicate: bool = False


class PartitionLog:
    """Segments ``[log_start_offset, log_end_offset)`` of one partition on disk."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Callable[[], float],
        segments: list[LogSegment],
        recovery_point: int,
    ) -> None:
        self.directory = directory
        self._config = config
        self._clock = clock
        self._segments = segments
        self._recovery_point = recovery_point
        self._last_flush_ms = self._now_ms()
        self._epoch_cache = LeaderEpochFileCache(directory)
        self._producer_state = ProducerStateManager()
        self._log_start_offset = segments[0].base_offset

    @classmethod
    def open(cls, directory: Path, config: LogConfig, time: Callable[[], float] = time.time) -> PartitionLog:
        """Load (and after a crash, recover) the partition in ``directory``, creating it if new."""
        segments, recovery_point = load_segments(directory, config, int(time() * 1000))
        log = cls(directory, config, time, segments, recovery_point)
        log._log_start_offset = min(
            max(log._read_log_start_offset(), segments[0].base_offset), log.log_end_offset
        )
        log._epoch_cache.truncate_from_end(log.log_end_offset)
        log._epoch_cache.truncate_from_start(log.log_start_offset)
        log._replay_batch_headers()
        return log

    # -- state ------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Apply altered topic configs; segment layout settings take effect at the next roll."""
        self._config = config

    @property
    def log_start_offset(self) -> int:
        """The first readable offset: DeleteRecords may have moved it past the first segment's
        base offset (then the first segment still holds some unreadable records)."""
        return max(self._log_start_offset, self._segments[0].base_offset)

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record will get."""
        return self._segments[-1].next_offset

    @property
    def recovery_point(self) -> int:
        """Everything below this offset has been flushed to disk."""
        return self._recovery_point

    @property
    def latest_epoch(self) -> int | None:
        return self._epoch_cache.latest_epoch

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    # -- appends ----------------------------------------------------------------

    def append_as_leader(self, batch: ByteBuffer, leader_epoch: int, now_ms: int | None = None) -> AppendInfo:
        """Validate a producer's batch, assign it the next offsets and append it.

        A retry of one of an idempotent producer's last five batches is not
        appended again: its original offsets come back with ``duplicate=True``.
        """
        now_ms = self._now_ms() if now_ms is None else now_ms
        header = validate_client_batch(batch, self._config.max_message_bytes)
        validate_timestamps(header, self._config, now_ms)
        if "compact" in self._config.cleanup_policy:
            validate_keys_for_compaction(batch, self.directory.name)
        if header.producer_id >= 0:
            original = self._producer_state.check(header)
            if original is not None:
                log_append_time = original.timestamp if self._config.log_append_time else -1
                return AppendInfo(
                    original.first_offset,
                    original.last_offset,
                    original.timestamp,
                    log_append_time,
                    duplicate=True,
                )
        codec_id = target_codec(self._config.compression_type, header.compression_type)
        if codec_id is not None:
            batch = self._recompressed(batch, codec_id)
        return self._stamp_and_append(batch, leader_epoch, now_ms)

    def _recompressed(self, batch: ByteBuffer, codec_id: int) -> bytes:
        """The batch in the topic's compression.type, still within max.message.bytes."""
        rebuilt = recompress(batch, codec_id, self._config.compression_level)
        if len(rebuilt) > self._config.max_message_bytes:
            raise MessageSizeTooLargeError(
                f"Record batch recompressed to {len(rebuilt)} bytes is larger than "
                f"max.message.bytes={self._config.max_message_bytes}"
            )
        return rebuilt

    def append_txn_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, leader_epoch: int
    ) -> AppendInfo:
        """Append the coordinator's marker ending ``producer_id``'s transaction here.

        An abort is also recorded in the active segment's ``.txnindex``. A
        marker from an older producer epoch is refused with
        InvalidProducerEpochError; a newer epoch becomes the producer's, which
        fences batches a zombie still sends with the old one. A marker from an
        older coordinator epoch than the producer's last one (a coordinator
        that lost its partition) is refused with TransactionCoordinatorFencedError.
        """
        self._producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        now_ms = self._now_ms()
        marker = build_end_txn_marker(producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
        return self._stamp_and_append(marker, leader_epoch, now_ms)

    def _stamp_and_append(self, batch: ByteBuffer, leader_epoch: int, now_ms: int) -> AppendInfo:
        append_time = now_ms if self._config.log_append_time else None
        stamped, header = stamp_batch(batch, self.log_end_offset, leader_epoch, append_time)
        self._append(stamped, header, now_ms)
        return AppendInfo(
            header.base_offset,
            header.last_offset,
            header.max_timestamp,
            -1 if append_time is None else append_time,
        )

    def append_as_follower(self, batches: ByteBuffer) -> AppendInfo | None:
        """Append batches copied from the leader, keeping their offsets and epochs.

        They must continue this log exactly. Every batch is checked before any
        is written, so a bad one leaves the log untouched. A trailing partial
        batch is ignored, as Kafka does with fetched data. None if no batch.
        """
        view = memoryview(batches)
        headers = self._validate_follower_batches(view)
        now_ms = self._now_ms()
        for position, header in headers:
            self._append(view[position : position + header.size], header, now_ms)
        if not headers:
            return None
        return AppendInfo(
            headers[0][1].base_offset,
            headers[-1][1].last_offset,
            max(header.max_timestamp for _, header in headers),
            -1,
        )

    def _validate_follower_batches(self, view: memoryview) -> list[tuple[int, BatchHeader]]:
        expected = self.log_end_offset
        headers = list(iter_batch_headers(view, 0, len(view)))
        for position, header in headers:
            if header.magic != CURRENT_MAGIC:
                raise UnsupportedForMessageFormatError(f"Replicated batch has magic {header.magic}")
            if not crc_matches(view, position, header):
                raise CorruptRecordError(f"Replicated batch at offset {header.base_offset} fails its CRC")
            if header.base_offset != expected:
                raise InvalidRecordError(
                    f"Replicated batch starts at offset {header.base_offset}, the log continues at {expected}"
                )
            expected = header.next_offset
        return headers

    def _append(self, batch: ByteBuffer, header: BatchHeader, now_ms: int) -> None:
        if self._segments[-1].should_roll(self._config, header, now_ms):
            self._roll(header.size, now_ms)
        active = self._segments[-1]
        active.append(batch, header)
        aborted = self._note_batch(header, batch, 0)
        if aborted is not None:
            active.txn_index.append(aborted)
        self.maybe_flush(now_ms)

    def _note_batch(self, header: BatchHeader, buf: ByteBuffer, position: int) -> AbortedTxn | None:
        """Update the state derived from batch headers: epoch starts, producer sequences and
        transactions. Returns the transaction an abort marker (at ``position`` in ``buf``) ends."""
        self.maybe_assign_epoch_start_offset(header.partition_leader_epoch, header.base_offset)
        if header.producer_id < 0:
            return None
        if not header.is_control:
            self._producer_state.update(header)
            return None
        marker = read_end_txn_marker(buf, position)
        coordinator_epoch = -1 if marker is None else marker.coordinator_epoch
        first_offset, last_stable_offset = self._producer_state.complete_txn(header, coordinator_epoch)
        if marker is None or marker.commit:
            return None
        return AbortedTxn(header.producer_id, first_offset, header.base_offset, last_stable_offset)

    def _replay_batch_headers(self) -> None:
        """Rebuild producer state and every segment's ``.txnindex`` from the log (after a load
        or a truncation); an index file that disagrees with the log is rewritten. Inactive
        segments are unmapped after the walk, so a replica in use keeps one descriptor."""
        self._producer_state.clear()
        for segment in self._segments:
            self._note_segment_start(segment)
            aborted = []
            for position, header in segment.batch_headers():
                txn = self._note_batch(header, segment.buffer, position)
                if txn is not None:
                    aborted.append(txn)
            segment.txn_index.replace(aborted)
            if segment is not self._segments[-1]:
                segment.unmap()

    def _note_segment_start(self, segment: LogSegment) -> None:
        first_unstable = self._producer_state.first_unstable_offset
        segment.unstable_offset_at_start = segment.base_offset if first_unstable is None else first_unstable

    # -- reads ------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, upper_bound_offset: int | None = None, min_one_message: bool = True
    ) -> memoryview:
        """Whole batches from the one containing ``offset``, zero-copy out of the mmap.

        At most ``max_bytes`` unless the first batch alone is bigger and
        ``min_one_message`` allows it (then just it), never a batch starting
        at or after ``upper_bound_offset`` (the high watermark or last stable
        offset, for consumers). Empty at the bound or log end.
        Raises OffsetOutOfRangeError outside [log start, log end].
        """
        log_end = self.log_end_offset
        if not self.log_start_offset <= offset <= log_end:
            raise OffsetOutOfRangeError(
                f"Offset {offset} is outside the log [{self.log_start_offset}, {log_end}]"
            )
        bound = log_end if upper_bound_offset is None else min(upper_bound_offset, log_end)
        if offset >= bound:
            return _EMPTY
        for segment in self._segments[self._segment_index(offset) :]:
            data = segment.read(offset, max_bytes, bound, min_one_message)
            if data is not None:
                return data
        return _EMPTY

    def aborted_transactions(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        """``(producer_id, first_offset)`` of every aborted transaction overlapping
        ``[start_offset, end_offset)``: what a read_committed fetch of that range needs.

        An abort is indexed in the segment of its marker, which is at or after
        ``start_offset``; earlier segments are skipped, and the walk stops at
        the first segment that began with no transaction open from before
        ``end_offset``, or as soon as an index proves no later marker matters.
        """
        found: list[tuple[int, int]] = []
        if start_offset >= end_offset:
            return found
        for segment in self._segments[self._segment_index(start_offset) :]:
            if segment.unstable_offset_at_start >= end_offset:
                break
            txns, complete = segment.txn_index.collect(start_offset, end_offset)
            found.extend((txn.producer_id, txn.first_offset) for txn in txns)
            if complete:
                break
        return found

    @property
    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest open transaction (never below the log start), or None."""
        first = self._producer_state.first_unstable_offset
        return None if first is None else max(first, self.log_start_offset)

    def open_transactions(self) -> list[dict[str, int]]:
        """``{"producer_id", "producer_epoch", "first_offset"}`` of each open transaction, earliest first."""
        return self._producer_state.open_transactions()

    def active_producers(self) -> list[ProducerStateEntry]:
        """The producer state of every producer this log remembers, for DescribeProducers."""
        return self._producer_state.active_producers()

    def offset_for_timestamp(self, timestamp_ms: int) -> TimestampOffset | None:
        """ListOffsets by time: the first record stamped at or after ``timestamp_ms``."""
        for segment in self._segments:
            if segment.max_timestamp >= timestamp_ms:
                found = segment.find_offset_for_timestamp(timestamp_ms)
                if found is not None:
                    return found
        return None

    def offset_of_max_timestamp(self) -> TimestampOffset | None:
        """ListOffsets MAX_TIMESTAMP (KIP-734): the first record stamped with the log's largest
        timestamp, found by time in the segment that holds it. None for an empty log."""
        newest = max(self._segments, key=lambda segment: segment.max_timestamp)
        if newest.max_timestamp < 0:
            return None
        return newest.find_offset_for_timestamp(newest.max_timestamp)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(epoch, end offset)``, see ``LeaderEpochFileCache.end_offset_for``."""
        return self._epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Record where ``leader_epoch`` starts if it is newer than every epoch seen.

        Appends call this for each batch; a new leader calls it before its
        first append, as Kafka's makeLeader does.
        """
        latest = self._epoch_cache.latest_epoch
        if latest is None or leader_epoch > latest:
            self._epoch_cache.assign(leader_epoch, start_offset)

    # -- log start ----------------------------------------------------------------

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start up to ``offset`` (DeleteRecords, or a follower following its
        leader's start); False if it is already there or beyond.

        The new start is checkpointed before any segment goes, so a crash in between only
        leaves segments the next retention pass deletes. Segments wholly below it are deleted;
        if that is all of them, the log rolls first so an empty active segment keeps the end.
        """
        if offset <= self.log_start_offset:
            return False
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(f"Offset {offset} is beyond the log end {self.log_end_offset}")
        self._log_start_offset = offset
        self._write_log_start_offset()
        count = sum(1 for segment in self._segments if segment.next_offset <= offset)
        if count == len(self._segments) and self._segments[-1].size:
            self.roll()
        count = min(count, len(self._segments) - 1)
        self._delete_oldest_segments(count)
        return True

    def _delete_oldest_segments(self, count: int) -> None:
        for segment in self._segments[:count]:
            segment.delete()
        del self._segments[:count]
        self._epoch_cache.truncate_from_start(self.log_start_offset)
        self._producer_state.truncate_head(self.log_start_offset)

    def _read_log_start_offset(self) -> int:
        lines = log_start_offset_checkpoint(self.directory).read()
        try:
            return int(lines[0][0]) if lines else 0
        except ValueError:
            return 0

    def _write_log_start_offset(self) -> None:
        log_start_offset_checkpoint(self.directory).write([[self._log_start_offset]])

    # -- truncation ---------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Cut the log so it ends at ``offset`` (a follower dropping what the leader lacks).

        A batch containing ``offset`` goes entirely. False if nothing was cut.
        """
        if offset >= self.log_end_offset:
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        index = self._segment_index(offset)
        for segment in self._segments[index + 1 :]:
            segment.delete()
        del self._segments[index + 1 :]
        active = self._segments[-1]
        active.truncate_to(offset)
        active.activate(self._config.segment_bytes)
        self._after_truncation()
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every batch and continue from ``offset`` (a follower far behind the leader's start)."""
        for segment in self._segments:
            segment.delete()
        self._segments = [
            LogSegment.create(
                self.directory, offset, self._config, self._config.segment_bytes, self._now_ms()
            )
        ]
        self._epoch_cache.clear()
        self._log_start_offset = offset
        self._write_log_start_offset()
        self._after_truncation()

    def _after_truncation(self) -> None:
        self._recovery_point = min(self._recovery_point, self.log_end_offset)
        self._epoch_cache.truncate_from_end(self.log_end_offset)
        self._replay_batch_headers()
        self._write_recovery_point()

    def replace_segment(self, segment: LogSegment, cleaned: Path) -> None:
        """Swap in a cleaned copy of a closed segment (log compaction). Offsets, epochs and
        producer fields are unchanged by cleaning, so only the segment's indexes are rebuilt."""
        index = self._segments.index(segment)
        segment.close()
        swap_in(self.directory, segment.base_offset, cleaned)
        fresh = LogSegment(self.directory, segment.base_offset, self._config, self._now_ms())
        fresh.recover()
        fresh.on_become_inactive()
        self._segments[index] = fresh

    # -- rolling, retention, flushing --------------------------------------------------

    def roll(self, now_ms: int | None = None) -> None:
        """Start a new active segment at the log end."""
        self._roll(self._config.segment_bytes, self._now_ms() if now_ms is None else now_ms)

    def _roll(self, incoming_size: int, now_ms: int) -> None:
        """Close the active segment (flushed, trimmed) and open one that can take ``incoming_size``.

        An empty active segment is replaced rather than kept, as in Kafka.
        Flushing here bounds crash recovery to the active segment.
        """
        active = self._segments[-1]
        base_offset = self.log_end_offset
        if active.size:
            active.on_become_inactive()
        self.flush(now_ms)
        if not active.size:
            active.delete()
            self._segments.pop()
        capacity = max(self._config.segment_bytes, incoming_size)
        segment = LogSegment.create(self.directory, base_offset, self._config, capacity, now_ms)
        self._note_segment_start(segment)
        self._segments.append(segment)
        self._write_recovery_point()

    def maybe_roll_on_time(self, now_ms: int | None = None) -> bool:
        """Roll a non-empty active segment older than ``segment.ms`` (less its jitter, see
        ``LogSegment.is_due_to_roll``) even without appends."""
        now_ms = self._now_ms() if now_ms is None else now_ms
        active = self._segments[-1]
        if active.size and active.is_due_to_roll(self._config, now_ms, now_ms):
            self.roll(now_ms)
            return True
        return False

    def delete_retained_segments(self, now_ms: int | None = None, high_watermark: int | None = None) -> int:
        """Enforce retention.ms and retention.bytes; returns how many segments were deleted.

        Periodic housekeeping: also forgets idempotent producers idle for
        longer than producer.id.expiration.ms. When every segment is past
        retention, the log is rolled first so an empty active segment remains
        and the log end offset is kept.
        """
        now_ms = self._now_ms() if now_ms is None else now_ms
        self._producer_state.remove_expired(now_ms)
        bound = self.log_end_offset if high_watermark is None else high_watermark
        count = deletable_segment_count(self._segments, self._config, now_ms, bound)
        if count == len(self._segments):
            self.roll(now_ms)
        if count:
            self._delete_oldest_segments(count)
        return count

    def maybe_flush(self, now_ms: int | None = None) -> None:
        """Flush when flush.messages or flush.ms say so (by default, never: the OS writes back)."""
        now_ms = self._now_ms() if now_ms is None else now_ms
        unflushed = self.log_end_offset - self._recovery_point
        if unflushed and (
            unflushed >= self._config.flush_messages or now_ms - self._last_flush_ms >= self._config.flush_ms
        ):
            self.flush(now_ms)

    def flush(self, now_ms: int | None = None) -> None:
        """msync every segment holding unflushed data, then advance the recovery point."""
        for segment in self._segments[self._segment_index(self._recovery_point) :]:
            segment.flush()
        self._recovery_point = self.log_end_offset
        self._last_flush_ms = self._now_ms() if now_ms is None else now_ms

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Trim and flush everything, then mark the shutdown clean so the next open skips recovery."""
        for segment in self._segments:
            segment.on_become_inactive()
        self.flush()
        for segment in self._segments:
            segment.close()
        self._write_recovery_point()
        write_atomically(self.directory / CLEAN_SHUTDOWN_FILE, b"")

    def delete(self) -> None:
        """Remove the partition from disk (DeleteTopics).

        The directory is first renamed to Kafka's ``<name>.<id>-delete`` form,
        so a crash halfway leaves nothing that looks like a partition.
        """
        for segment in self._segments:
            segment.delete()
        doomed = self.directory.with_name(f"{self.directory.name}.{uuid.uuid4().hex}-delete")
        self.directory.rename(doomed)
        fsync_directory(doomed.parent)
        shutil.rmtree(doomed)

    # -- helpers ---------------------------------------------------------------------

    def _segment_index(self, offset: int) -> int:
        """Index of the segment that would hold ``offset`` (the first one for offsets before it)."""
        return max(bisect.bisect_right(self._segments, offset, key=lambda s: s.base_offset) - 1, 0)

    def _write_recovery_point(self) -> None:
        recovery_point_checkpoint(self.directory).write([[self._recovery_point]])

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
