"""A consumer group's records in ``__consumer_offsets``, in Kafka's own layouts (KIP-848).

Kafka keeps a consumer group as several record kinds, each a key version: 3 the group's
epoch (ConsumerGroupMetadata), 5 a member's subscription (ConsumerGroupMemberMetadata), 6 the
target assignment's epoch, 7 a member's target assignment, 8 a member's current assignment and
epochs. Keys are classic (int16-length strings); values are flexible (compact strings and
arrays, tag buffers), value version 0. A null value is a tombstone. A new coordinator replays
them in log order to get the group back (``replay``).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from brokerd.coordinator.consumer_group.model import (
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    assignment_from,
)

GROUP_METADATA = 3
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
KEY_VERSIONS = frozenset(
    {
        GROUP_METADATA,
        4,
        MEMBER_METADATA,
        TARGET_ASSIGNMENT_METADATA,
        TARGET_ASSIGNMENT_MEMBER,
        CURRENT_MEMBER_ASSIGNMENT,
    }
)
VALUE_VERSION = 0
MAX_ARRAY = 1_000_000  # bounds what a corrupt record could make us allocate

Record = tuple[bytes, bytes | None]


# -- encoding ---------------------------------------------------------------------------------
def _key(version: int, *parts: str) -> bytes:
    out = bytearray(struct.pack(">h", version))
    for part in parts:
        raw = part.encode()
        out += struct.pack(">h", len(raw)) + raw
    return bytes(out)


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray(struct.pack(">h", VALUE_VERSION))

    def uvarint(self, value: int) -> _Writer:
        while value >= 0x80:
            self.buf.append((value & 0x7F) | 0x80)
            value >>= 7
        self.buf.append(value)
        return self

    def i8(self, value: int) -> _Writer:
        self.buf += struct.pack(">b", value)
        return self

    def i32(self, value: int) -> _Writer:
        self.buf += struct.pack(">i", value)
        return self

    def string(self, value: str | None) -> _Writer:
        if value is None:
            return self.uvarint(0)
        raw = value.encode()
        self.uvarint(len(raw) + 1)
        self.buf += raw
        return self

    def strings(self, values: list[str]) -> _Writer:
        self.uvarint(len(values) + 1)
        for value in values:
            self.string(value)
        return self

    def assignment(self, assignment: Assignment) -> _Writer:
        self.uvarint(len(assignment) + 1)
        for topic_id in sorted(assignment, key=str):
            self.buf += topic_id.bytes
            partitions = sorted(assignment[topic_id])
            self.uvarint(len(partitions) + 1)
            for partition in partitions:
                self.i32(partition)
            self.uvarint(0)  # tag buffer
        return self

    def done(self) -> bytes:
        self.uvarint(0)  # the value's tag buffer
        return bytes(self.buf)


def group_metadata(group: ConsumerGroup) -> Record:
    return _key(GROUP_METADATA, group.group_id), _Writer().i32(group.group_epoch).done()


def member_metadata(group_id: str, member: ConsumerGroupMember) -> Record:
    value = (
        _Writer()
        .string(member.instance_id)
        .string(member.rack_id)
        .string(member.client_id)
        .string(member.client_host)
        .strings(member.subscribed_topic_names)
        .string(member.subscribed_topic_regex)
        .i32(member.rebalance_timeout_ms)
        .string(member.server_assignor)
        .done()
    )
    return _key(MEMBER_METADATA, group_id, member.member_id), value


def target_assignment_metadata(group: ConsumerGroup) -> Record:
    return _key(TARGET_ASSIGNMENT_METADATA, group.group_id), _Writer().i32(group.assignment_epoch).done()


def target_assignment_member(group_id: str, member_id: str, target: Assignment) -> Record:
    return _key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), _Writer().assignment(target).done()


def current_member_assignment(group_id: str, member: ConsumerGroupMember) -> Record:
    value = (
        _Writer()
        .i32(member.member_epoch)
        .i32(member.previous_member_epoch)
        .i8(int(member.state))
        .assignment(member.assigned)
        .assignment(member.pending_revocation)
        .done()
    )
    return _key(CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id), value


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """What removing a member writes: its current assignment, target and subscription go
    (Kafka's order: current assignment first, so a replay never sees an owner without a
    member)."""
    return [
        (_key(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None),
        (_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None),
        (_key(MEMBER_METADATA, group_id, member_id), None),
    ]


def group_tombstones(group_id: str) -> list[Record]:
    return [
        (_key(TARGET_ASSIGNMENT_METADATA, group_id), None),
        (_key(GROUP_METADATA, group_id), None),
    ]


# -- decoding ---------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 35:
                raise ValueError("varint too long")

    def i8(self) -> int:
        (value,) = struct.unpack_from(">b", self.data, self.pos)
        self.pos += 1
        return int(value)

    def i32(self) -> int:
        (value,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return int(value)

    def string(self) -> str | None:
        length = self.uvarint() - 1
        if length < 0:
            return None
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw.decode()

    def count(self) -> int:
        count = self.uvarint() - 1
        if count > MAX_ARRAY:
            raise ValueError(f"array of {count} elements")
        return max(count, 0)

    def strings(self) -> list[str]:
        return [self.string() or "" for _ in range(self.count())]

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def assignment(self) -> Assignment:
        pairs = []
        for _ in range(self.count()):
            topic_id = uuid.UUID(bytes=bytes(self.data[self.pos : self.pos + 16]))
            self.pos += 16
            pairs.append((topic_id, [self.i32() for _ in range(self.count())]))
            self.tags()
        return assignment_from(pairs)

    def key_strings(self, count: int) -> list[str]:
        out = []
        for _ in range(count):
            (length,) = struct.unpack_from(">h", self.data, self.pos)
            self.pos += 2
            out.append(self.data[self.pos : self.pos + length].decode())
            self.pos += length
        return out


@dataclass(frozen=True)
class ConsumerGroupRecord:
    """One record of a consumer group, as found in the log."""

    version: int  # the key version: which kind of record
    key: bytes
    value: bytes | None

    @property
    def group_id(self) -> str:
        return _Reader(self.key, 2).key_strings(1)[0]


def replay(groups: dict[str, ConsumerGroup], records: Iterable[ConsumerGroupRecord]) -> None:
    """Apply records in log order to ``groups`` (Kafka's replay of the coordinator records).
    Members come back with the epochs and assignments they had; their sessions are the
    caller's to start."""
    for record in records:
        _apply(groups, record)


def _apply(groups: dict[str, ConsumerGroup], record: ConsumerGroupRecord) -> None:
    key = _Reader(record.key, 2)
    version = record.version
    if version in (GROUP_METADATA, TARGET_ASSIGNMENT_METADATA, 4):
        (group_id,) = key.key_strings(1)
        member_id = None
    else:
        group_id, member_id = key.key_strings(2)
    if record.value is None:
        if version == GROUP_METADATA:
            groups.pop(group_id, None)
        elif member_id is not None and group_id in groups:
            group = groups[group_id]
            if version == MEMBER_METADATA:
                group.members.pop(member_id, None)
            elif version == TARGET_ASSIGNMENT_MEMBER:
                group.target.pop(member_id, None)
            elif version == CURRENT_MEMBER_ASSIGNMENT and member_id in group.members:
                member = group.members[member_id]
                member.assigned, member.pending_revocation = {}, {}
        return
    group = groups.setdefault(group_id, ConsumerGroup(group_id))
    value = _Reader(record.value, 2)
    if version == GROUP_METADATA:
        group.group_epoch = value.i32()
    elif version == TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = value.i32()
    elif version == TARGET_ASSIGNMENT_MEMBER and member_id is not None:
        group.target[member_id] = value.assignment()
    elif version == MEMBER_METADATA and member_id is not None:
        member = group.members.setdefault(member_id, ConsumerGroupMember(member_id))
        member.instance_id = value.string()
        member.rack_id = value.string()
        member.client_id = value.string() or ""
        member.client_host = value.string() or ""
        member.subscribed_topic_names = value.strings()
        member.subscribed_topic_regex = value.string()
        member.rebalance_timeout_ms = value.i32()
        member.server_assignor = value.string()
    elif version == CURRENT_MEMBER_ASSIGNMENT and member_id is not None:
        member = group.members.setdefault(member_id, ConsumerGroupMember(member_id))
        member.member_epoch = value.i32()
        member.previous_member_epoch = value.i32()
        state = value.i8()
        member.state = MemberState(state) if state in MemberState._value2member_map_ else MemberState.UNKNOWN
        member.assigned = value.assignment()
        member.pending_revocation = value.assignment()
