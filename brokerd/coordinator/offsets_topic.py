"""The ``__consumer_offsets`` topic's record format (a group's partition: records.partition_for).

Records use Kafka's own key and value layouts (offset commit key v1, value v3), so the topic
can be read with the same tools as a real cluster's: ``kctl consume __consumer_offsets``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka.record.memory_records import MemoryRecords

from brokerd.coordinator.records import read_string, write_string

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
NO_LEADER_EPOCH = -1
COMMIT_MARKER = 1  # control record type; ABORT is 0


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = 0


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", OFFSET_KEY_VERSION) + write_string(group) + write_string(topic) + \
        struct.pack(">i", partition)


def offset_value(committed: CommittedOffset) -> bytes:
    return (struct.pack(">hqi", OFFSET_VALUE_VERSION, committed.offset, committed.leader_epoch)
            + write_string(committed.metadata) + struct.pack(">q", committed.commit_timestamp))


@dataclass
class OffsetsBatch:
    """One batch of the offsets topic: offset commits, transactional ones carrying their
    producer, or a transaction marker (``marker`` True = commit, False = abort)."""
    producer_id: int
    producer_epoch: int
    next_sequence: int
    transactional: bool
    marker: bool | None
    commits: list[tuple[str, str, int, CommittedOffset | None]]


def read_offsets_batches(data: bytes):
    """Yield an OffsetsBatch for every batch, in log order; a commit of None is a
    tombstone (the offset was deleted)."""
    batches = MemoryRecords(bytes(data))
    while batches.has_next():
        batch = batches.next_batch()
        records = list(batch)
        marker = None
        commits = []
        if batch.is_control_batch:
            marker = records[0].type == COMMIT_MARKER
        else:
            commits = [commit for record in records
                       if (commit := _read_offset_commit(record.key, record.value)) is not None]
        yield OffsetsBatch(batch.producer_id, batch.producer_epoch,
                           batch.base_sequence + len(records), batch.is_transactional, marker,
                           commits)


def _read_offset_commit(key: bytes | None, value: bytes | None):
    if key is None or struct.unpack_from(">h", key)[0] not in (0, 1):
        return None  # group metadata records and unknown versions
    group, pos = read_string(key, 2)
    topic, pos = read_string(key, pos)
    (partition,) = struct.unpack_from(">i", key, pos)
    return group, topic, partition, _decode_value(value)


def _decode_value(value: bytes | None) -> CommittedOffset | None:
    if value is None:
        return None
    version, offset = struct.unpack_from(">hq", value)
    pos = 10
    epoch = NO_LEADER_EPOCH
    if version >= 3:
        (epoch,) = struct.unpack_from(">i", value, pos)
        pos += 4
    metadata, pos = read_string(value, pos)
    (timestamp,) = struct.unpack_from(">q", value, pos)
    return CommittedOffset(offset, epoch, metadata, timestamp)
