"""The fence on __share_group_state, where its records are appended (Kafka's share
coordinator refuses such writes the same way, FENCED_STATE_EPOCH and FENCED_LEADER_EPOCH):
a snapshot of a share partition older, by state epoch and then leader epoch, than the newest
one already in the state partition for the same key never reaches the log.

The sender's check (share_partition_manager) cannot close this alone: a leader paused
between its check and its write landing still delivers a deposed leader's snapshot, and the
topic is compacted, which keeps the latest offset of each key whatever its epochs, so that
snapshot would outlive the new leader's. Refused here, in the same turn of the event loop as
the append, the latest offset of each key is always its newest snapshot.

The newest epochs of each key are kept in memory per state partition led here, rebuilt from
the local log when a write first reaches the partition at a leader epoch (another leader may
have appended meanwhile), so a write costs a look-up, never a scan.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator

from kafka.errors import FencedLeaderEpochError, FencedStateEpochError, InvalidRecordError, KafkaError
from kafka.record.memory_records import MemoryRecords

from brokerd.coordinator.records import read_whole_log
from brokerd.ports import HostedReplica, HostedReplicas, ReplicaLog
from brokerd.share.share_state import SHARE_STATE_TOPIC, ShareState
from brokerd.storage.partition_log import AppendInfo

log = logging.getLogger(__name__)

Epochs = tuple[int, int]  # (state epoch, leader epoch), as ShareState.epochs
UNREADABLE = (KafkaError, struct.error, ValueError, IndexError)  # what decoding a bad batch raises


class ShareStateEpochs:
    """The newest (state epoch, leader epoch) of each share partition's snapshot, by state
    partition led here, and the appends to those partitions that it admits."""

    def __init__(self, replicas: HostedReplicas) -> None:
        self._replicas = replicas
        # state partition -> (the leader epoch it was loaded at, newest epochs by record key)
        self._loaded: dict[int, tuple[int, dict[bytes, Epochs]]] = {}

    def append(self, index: int, replica: HostedReplica, records: bytes, acks: int) -> AppendInfo:
        """Append the batch to state partition ``index``, which ``replica`` leads, unless a
        snapshot in it is older than the newest of its key: FENCED_STATE_EPOCH (an admin
        reset the share partition since its state was loaded) or FENCED_LEADER_EPOCH (a
        newer leader of the share partition wrote), and nothing of the batch is appended."""
        newest = self._newest(index, replica)
        try:
            snapshots = list(_snapshots(records))
        except UNREADABLE as exc:
            raise InvalidRecordError(f"{SHARE_STATE_TOPIC}-{index}: unreadable record batch: {exc}") from exc
        admitted: dict[bytes, Epochs] = {}
        for key, state in snapshots:
            refusal = _refusal(key, state, admitted.get(key) or newest.get(key))
            if refusal is not None:
                raise refusal
            admitted[key] = state.epochs
        info = replica.append_as_leader(records, acks)
        newest.update(admitted)
        return info

    def forget_unled(self) -> None:
        """Drop what is kept of the state partitions no longer led here at the leader epoch
        they were loaded at."""
        for index, (leader_epoch, _) in list(self._loaded.items()):
            replica = self._replicas.partitions.get((SHARE_STATE_TOPIC, index))
            if replica is None or not replica.is_leader or replica.leader_epoch != leader_epoch:
                del self._loaded[index]

    def _newest(self, index: int, replica: HostedReplica) -> dict[bytes, Epochs]:
        loaded = self._loaded.get(index)
        if loaded is None or loaded[0] != replica.leader_epoch:
            loaded = replica.leader_epoch, _read_newest(replica.log)
            self._loaded[index] = loaded
            log.info(
                "%s-%d: newest state epochs of %d share partitions loaded at leader epoch %d",
                SHARE_STATE_TOPIC,
                index,
                len(loaded[1]),
                loaded[0],
            )
        return loaded[1]


def _read_newest(log_: ReplicaLog) -> dict[bytes, Epochs]:
    """The newest epochs of each key in the whole local log of a state partition."""
    newest: dict[bytes, Epochs] = {}
    for chunk in read_whole_log(log_):
        try:
            for key, state in _snapshots(chunk):
                newest[key] = max(newest.get(key, state.epochs), state.epochs)
        except UNREADABLE as exc:  # appended before this fence refused such batches
            log.warning("%s: a record batch that cannot be read is not fenced: %r", SHARE_STATE_TOPIC, exc)
    return newest


def _snapshots(data: bytes) -> Iterator[tuple[bytes, ShareState]]:
    """(record key, snapshot) of each share-state record of the batches, in order; records
    that are not share-partition snapshots are not fenced (readers skip them)."""
    batches = MemoryRecords(data)
    while batches.has_next():
        batch = batches.next_batch()
        if batch.is_control_batch:
            continue
        for record in batch:
            if record.key is None or record.value is None:
                continue
            try:
                yield bytes(record.key), ShareState.decode(record.value)
            except (ValueError, KeyError, TypeError):
                continue


def _refusal(key: bytes, state: ShareState, newest: Epochs | None) -> KafkaError | None:
    """Kafka's share coordinator's answer to a snapshot older than ``newest``: the state
    epoch first, then the leader epoch."""
    if newest is None or state.epochs >= newest:
        return None
    where = f"{SHARE_STATE_TOPIC} {key.decode(errors='replace')}"
    if state.state_epoch < newest[0]:
        return FencedStateEpochError(f"{where}: state epoch {state.state_epoch} is older than {newest[0]}")
    return FencedLeaderEpochError(f"{where}: leader epoch {state.leader_epoch} is older than {newest[1]}")
