"""What every kind of group shares (Kafka's Group interface): the coordinator keeps classic,
consumer (KIP-848) and share (KIP-932) groups in one map, and ListGroups, offset retention,
OffsetDelete and DeleteGroups ask each the same few things whatever its protocol."""

from __future__ import annotations

from enum import Enum
from typing import Protocol

# the protocol type of consumers' groups (classic ones, and every KIP-848 group)
CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupType(str, Enum):
    """ListGroups' group type (v5+), and how the coordinator tells a group's protocol."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"


class Group(Protocol):
    @property
    def group_id(self) -> str: ...

    @property
    def type(self) -> GroupType: ...

    @property
    def protocol_type(self) -> str | None:
        """ListGroups' and DescribeGroups' protocol type ("consumer" for a consumer group's
        members, "share" for a share group; a classic group's is its members')."""

    def state_name(self) -> str:
        """The state as ListGroups names it."""

    def has_members(self) -> bool: ...

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member subscribes to ``topic``: its offsets stay (OffsetDelete, retention)."""
