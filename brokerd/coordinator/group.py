"""A consumer group's membership and its rebalance state machine (the classic protocol).

States as in Kafka's GroupMetadata: Empty -> PreparingRebalance (members rejoin) ->
CompletingRebalance (the leader computes the assignment) -> Stable. The broker never reads
the assignment: it picks a protocol every member supports and passes the leader's bytes on.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum


class GroupState(str, Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    session_deadline: float = 0.0
    join_waiter: asyncio.Future | None = None
    sync_waiter: asyncio.Future | None = None

    def metadata_for(self, protocol: str) -> bytes:
        return next(meta for name, meta in self.protocols if name == protocol)


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    rebalance_task: asyncio.Task | None = None
    join_delay_until: float = 0.0

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """A joining member must speak the group's type and share a protocol with everyone."""
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        common = set.intersection(*({n for n, _ in m.protocols} for m in self.members.values()))
        return bool(common & {name for name, _ in protocols})

    def select_protocol(self) -> str:
        """Every member votes for its most preferred protocol that all members support."""
        common = set.intersection(*({n for n, _ in m.protocols} for m in self.members.values()))
        votes = Counter(next(n for n, _ in m.protocols if n in common)
                        for m in self.members.values())
        return votes.most_common(1)[0][0]

    def rebalance_timeout_s(self) -> float:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0) / 1000

    def all_members_joined(self) -> bool:
        return all(m.join_waiter is not None for m in self.members.values())
