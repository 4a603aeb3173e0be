"""A KIP-848 consumer group and its members, as Kafka's ConsumerGroup and ConsumerGroupMember
keep them.

Three epochs drive the protocol: the group epoch grows with every change of membership or
subscriptions; the assignment epoch is the group epoch the target assignment was computed
for; each member's epoch is the assignment epoch it has reconciled to. Partitions are named
by topic id, as on the wire.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from kafka.errors import StaleMemberEpochError, UnknownMemberIdError

from brokerd.coordinator.group_types import CONSUMER_PROTOCOL_TYPE, GroupType

# topic id -> partitions; never holds a topic with no partition
Assignment = dict[uuid.UUID, frozenset[int]]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(IntEnum):
    """Kafka's MemberState (its values are what the current assignment record stores)."""

    STABLE = 1  # has its target
    UNREVOKED_PARTITIONS = 2  # must first give up partitions it no longer gets
    UNRELEASED_PARTITIONS = 3  # waits for partitions another member still has
    UNKNOWN = 127


class ConsumerGroupState(str, Enum):
    """How ListGroups and ConsumerGroupDescribe name a consumer group's state."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    session_deadline: float = 0.0  # monotonic seconds
    revocation_deadline: float | None = None  # set while partitions must be revoked

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target
    # what the last assignment was computed over: topic name -> (id, partitions)
    subscribed_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    # the members' regular expressions the coordinator has resolved; one a member has just
    # subscribed to is resolved after its heartbeat is answered, as Kafka does it in the
    # background, so that heartbeat's assignment leaves its topics out
    resolved_regexes: set[str] = field(default_factory=set)

    @property
    def type(self) -> GroupType:
        return GroupType.CONSUMER

    @property
    def protocol_type(self) -> str:
        return CONSUMER_PROTOCOL_TYPE

    def state_name(self) -> str:
        return self.state().value

    def has_members(self) -> bool:
        return bool(self.members)

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(
            m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
            for m in self.members.values()
        ):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member_id(self, instance_id: str) -> str | None:
        return next((m.member_id for m in self.members.values() if m.instance_id == instance_id), None)

    def owner_epochs(self, excluding: str) -> dict[tuple[uuid.UUID, int], int]:
        """Every partition a member other than ``excluding`` still has (assigned or waiting
        for its revocation), with that member's epoch: a partition is free for its next owner
        only once it is here no more (Kafka's currentPartitionEpoch)."""
        owned: dict[tuple[uuid.UUID, int], int] = {}
        for member in self.members.values():
            if member.member_id == excluding:
                continue
            for assignment in (member.assigned, member.pending_revocation):
                for topic_id, partitions in assignment.items():
                    for partition in partitions:
                        owned[(topic_id, partition)] = member.member_epoch
        return owned

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    def subscribed_topic_names(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member subscribes to ``topic`` (by name, or its regex resolved when the
        assignment was last computed)."""
        return topic in self.subscribed_topic_names() or topic in self.subscribed_metadata

    def validate_offset_commit(self, member_id: str, member_epoch: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetCommit: an admin commit (no member, epoch < 0)
        only into an empty group; a member's with its current epoch."""
        if member_epoch < 0 and not member_id and not self.members:
            return
        member = self.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {self.group_id}.")
        if member_epoch != member.member_epoch:
            raise StaleMemberEpochError(
                f"The received member epoch {member_epoch} does not match the expected member epoch "
                f"{member.member_epoch}."
            )

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        """OffsetFetch v9+: a member fetching with its epoch must have the current one."""
        if member_id and member_epoch >= 0:
            self.validate_offset_commit(member_id, member_epoch)


def assignment_from(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> Assignment:
    out: Assignment = {}
    for topic_id, partitions in pairs:
        merged = out.get(topic_id, frozenset()) | frozenset(partitions)
        if merged:
            out[topic_id] = merged
    return out


def assignment_size(assignment: Mapping[uuid.UUID, frozenset[int]]) -> int:
    return sum(len(p) for p in assignment.values())


def wire_assignment(assignment: Mapping[uuid.UUID, frozenset[int]]) -> list[dict[str, object]]:
    """An assignment as ConsumerGroupHeartbeat's TopicPartitions, in a stable order."""
    return [
        {"topic_id": topic_id, "partitions": sorted(assignment[topic_id])}
        for topic_id in sorted(assignment, key=str)
    ]
