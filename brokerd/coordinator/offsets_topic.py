"""The ``__consumer_offsets`` topic's record format (a group's partition: records.partition_for).

Records use Kafka's own key and value layouts (offset commit key v1, value v3; group metadata
key v2, value v3; KIP-848 consumer groups key versions 3-8, see consumer_group/records.py),
so the topic can be read with the same tools as a real cluster's:
``kctl consume __consumer_offsets``. The key version tells the two kinds apart.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kafka.record.memory_records import MemoryRecords

from brokerd.coordinator.consumer_group.records import KEY_VERSIONS as CONSUMER_GROUP_KEY_VERSIONS
from brokerd.coordinator.consumer_group.records import ConsumerGroupRecord
from brokerd.coordinator.records import (
    read_bytes,
    read_nullable_string,
    read_string,
    write_bytes,
    write_string,
)

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3  # the last one before flexible v4; has group instance ids
NO_LEADER_EPOCH = -1
COMMIT_MARKER = 1  # control record type; ABORT is 0


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = 0


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return (
        struct.pack(">h", OFFSET_KEY_VERSION)
        + write_string(group)
        + write_string(topic)
        + struct.pack(">i", partition)
    )


def offset_value(committed: CommittedOffset) -> bytes:
    return (
        struct.pack(">hqi", OFFSET_VALUE_VERSION, committed.offset, committed.leader_epoch)
        + write_string(committed.metadata)
        + struct.pack(">q", committed.commit_timestamp)
    )


@dataclass(frozen=True)
class MemberMetadata:
    """A member as Kafka's GroupMetadataValue keeps it: its subscription is its metadata for
    the group's selected protocol only."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadata:
    """A group's generation as stored when it completes (or the group becomes empty), so a
    new coordinator carries on with the same generation, leader, members and assignment."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[MemberMetadata]


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA_KEY_VERSION) + write_string(group)


def group_metadata_value(metadata: GroupMetadata) -> bytes:
    parts = [
        struct.pack(">h", GROUP_METADATA_VALUE_VERSION),
        write_string(metadata.protocol_type),
        struct.pack(">i", metadata.generation),
        write_string(metadata.protocol),
        write_string(metadata.leader),
        struct.pack(">qi", metadata.current_state_timestamp, len(metadata.members)),
    ]
    for m in metadata.members:
        parts += [
            write_string(m.member_id),
            write_string(m.group_instance_id),
            write_string(m.client_id),
            write_string(m.client_host),
            struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms),
            write_bytes(m.subscription),
            write_bytes(m.assignment),
        ]
    return b"".join(parts)


@dataclass
class OffsetsBatch:
    """One batch of the offsets topic: offset commits and group metadata, transactional
    commits carrying their producer, or a transaction marker (``marker`` True = commit,
    False = abort). A commit or group metadata of None is a tombstone."""

    producer_id: int
    producer_epoch: int
    next_sequence: int
    transactional: bool
    marker: bool | None
    commits: list[tuple[str, str, int, CommittedOffset | None]]
    groups: list[tuple[str, GroupMetadata | None]]
    consumer_groups: list[ConsumerGroupRecord]  # KIP-848 groups' records (key versions 3-8)


def read_offsets_batches(data: bytes) -> Iterator[OffsetsBatch]:
    """Yield an OffsetsBatch for every batch, in log order."""
    batches = MemoryRecords(bytes(data))
    while batches.has_next():
        batch = batches.next_batch()
        records = list(batch)
        marker, commits, groups = None, [], []
        consumer_groups = []
        if batch.is_control_batch:
            marker = records[0].type == COMMIT_MARKER
        else:
            for record in records:
                version = struct.unpack_from(">h", record.key)[0] if record.key else None
                if version in (0, 1):
                    commits.append(_read_offset_commit(record.key, record.value))
                elif version == GROUP_METADATA_KEY_VERSION:
                    groups.append(_read_group_metadata(record.key, record.value))
                elif version in CONSUMER_GROUP_KEY_VERSIONS:
                    consumer_groups.append(ConsumerGroupRecord(version, record.key, record.value))
        yield OffsetsBatch(
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence + len(records),
            batch.is_transactional,
            marker,
            commits,
            groups,
            consumer_groups,
        )


def _read_offset_commit(key: bytes, value: bytes | None) -> tuple[str, str, int, CommittedOffset | None]:
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


def _read_group_metadata(key: bytes, value: bytes | None) -> tuple[str, GroupMetadata | None]:
    """Group metadata value versions 0-3 (v4 is flexible and not written here); fields a
    version lacks take Kafka's defaults."""
    group, _ = read_string(key, 2)
    if value is None:
        return group, None
    (version,) = struct.unpack_from(">h", value)
    protocol_type, pos = read_string(value, 2)
    (generation,) = struct.unpack_from(">i", value, pos)
    protocol, pos = read_nullable_string(value, pos + 4)
    leader, pos = read_nullable_string(value, pos)
    timestamp = -1
    if version >= 2:
        (timestamp,) = struct.unpack_from(">q", value, pos)
        pos += 8
    (count,) = struct.unpack_from(">i", value, pos)
    pos += 4
    members = []
    for _ in range(count):
        member_id, pos = read_string(value, pos)
        instance_id = None
        if version >= 3:
            instance_id, pos = read_nullable_string(value, pos)
        client_id, pos = read_string(value, pos)
        client_host, pos = read_string(value, pos)
        rebalance_timeout = -1
        if version >= 1:
            (rebalance_timeout,) = struct.unpack_from(">i", value, pos)
            pos += 4
        (session_timeout,) = struct.unpack_from(">i", value, pos)
        subscription, pos = read_bytes(value, pos + 4)
        assignment, pos = read_bytes(value, pos)
        members.append(
            MemberMetadata(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout if rebalance_timeout >= 0 else session_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    return group, GroupMetadata(protocol_type, generation, protocol, leader, timestamp, members)
