"""The ``__consumer_offsets`` topic: which partition holds a group, and its record format.

Records use Kafka's own key and value layouts (offset commit key v1, value v3), so the topic
can be read with the same tools as a real cluster's: ``kctl consume __consumer_offsets``.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
NO_LEADER_EPOCH = -1


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = 0


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % partitions``, with Java's String.hashCode,
    so a group lands on the same partition number as it would on Apache Kafka."""
    h = 0
    data = group_id.encode("utf-16-be")
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % num_partitions


def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if length < 0:
        return "", pos
    return buf[pos:pos + length].decode(), pos + length


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", OFFSET_KEY_VERSION) + _string(group) + _string(topic) + \
        struct.pack(">i", partition)


def offset_value(committed: CommittedOffset) -> bytes:
    return (struct.pack(">hqi", OFFSET_VALUE_VERSION, committed.offset, committed.leader_epoch)
            + _string(committed.metadata) + struct.pack(">q", committed.commit_timestamp))


def build_batch(entries: list[tuple[bytes, bytes | None]]) -> bytes:
    """One record batch of (key, value) records; a None value is a tombstone."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=2**31 - 1)
    now = int(time.time() * 1000)
    for offset, (key, value) in enumerate(entries):
        builder.append(offset, timestamp=now, key=key, value=value, headers=[])
    return bytes(builder.build())


def read_offset_commits(data: bytes):
    """Yield (group, topic, partition, CommittedOffset | None) for every offset commit record,
    in log order; None is a tombstone (the offset was deleted)."""
    records = MemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        if batch.is_control_batch:
            continue
        for record in batch:
            key = record.key
            if key is None or struct.unpack_from(">h", key)[0] not in (0, 1):
                continue  # group metadata records and unknown versions
            group, pos = _read_string(key, 2)
            topic, pos = _read_string(key, pos)
            (partition,) = struct.unpack_from(">i", key, pos)
            yield group, topic, partition, _decode_value(record.value)


def _decode_value(value: bytes | None) -> CommittedOffset | None:
    if value is None:
        return None
    version, offset = struct.unpack_from(">hq", value)
    pos = 10
    epoch = NO_LEADER_EPOCH
    if version >= 3:
        (epoch,) = struct.unpack_from(">i", value, pos)
        pos += 4
    metadata, pos = _read_string(value, pos)
    (timestamp,) = struct.unpack_from(">q", value, pos)
    return CommittedOffset(offset, epoch, metadata, timestamp)
