"""A share group as its coordinator keeps it (Kafka's ShareGroup): members, each with its
epoch, subscription and assignment, and the group epoch that rises with every change of
membership, subscriptions or the subscribed topics' partitions."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from brokerd.coordinator.group_types import GroupType
from brokerd.coordinator.share_group.assignor import Assignment

SHARE_PROTOCOL_TYPE = "share"


class ShareGroupState(Enum):
    """What ShareGroupDescribe and ListGroups say of a share group."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: set[str]
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assignment: Assignment = field(default_factory=dict)
    # the assignment the member was last told of (None: never): a heartbeat carries the
    # assignment only when it differs, as Kafka's
    sent_assignment: Assignment | None = None
    session_deadline_s: float = 0.0


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    # the target assignment of assignment_epoch, and what it was computed from
    target: dict[str, Assignment] = field(default_factory=dict)
    partition_counts: dict[str, int] = field(default_factory=dict)

    @property
    def type(self) -> GroupType:
        return GroupType.SHARE

    @property
    def protocol_type(self) -> str:
        return SHARE_PROTOCOL_TYPE

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def state_name(self) -> str:
        return self.state.value

    def has_members(self) -> bool:
        return bool(self.members)

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topics}

    def is_subscribed_to(self, topic: str) -> bool:
        return any(topic in m.subscribed_topics for m in self.members.values())
