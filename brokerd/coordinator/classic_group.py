"""A classic group's membership and its rebalance states (Kafka's ClassicGroup).

States as in Kafka's GroupMetadata: Empty -> PreparingRebalance (members rejoin) ->
CompletingRebalance (the leader computes the assignment) -> Stable. The broker never reads
the assignment: it picks a protocol every member supports and passes the leader's bytes on.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kafka.errors import FencedInstanceIdError, NotCoordinatorError, UnknownMemberIdError

from brokerd.coordinator.group_types import GroupType
from brokerd.coordinator.offsets_topic import GroupMetadata, MemberMetadata
from brokerd.protocol.codec import subscribed_topics


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
    join_waiter: asyncio.Future[dict[str, Any]] | None = None
    sync_waiter: asyncio.Future[bytes] | None = None

    def metadata_for(self, protocol: str) -> bytes:
        return next(meta for name, meta in self.protocols if name == protocol)

    @property
    def is_static(self) -> bool:
        """KIP-345: a member with a group.instance.id keeps its place across restarts."""
        return self.group_instance_id is not None

    def restart_session(self, now: float) -> None:
        self.session_deadline = now + self.session_timeout_ms / 1000

    def update_from(self, candidate: Member) -> None:
        """A rejoining member may bring new protocols (subscription) and timeouts."""
        self.protocols = candidate.protocols
        self.session_timeout_ms = candidate.session_timeout_ms
        self.rebalance_timeout_ms = candidate.rebalance_timeout_ms

    def fail_waiters(self, exc: Exception) -> None:
        """Answer the member's parked JoinGroup and SyncGroup, if any, with ``exc``."""
        for waiter in (self.join_waiter, self.sync_waiter):
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)
        self.join_waiter = self.sync_waiter = None


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    # KIP-394: member ids handed out with MEMBER_ID_REQUIRED -> when they expire unused
    pending_members: dict[str, float] = field(default_factory=dict)
    rebalance_task: asyncio.Task[None] | None = None
    join_delay_until: float = 0.0
    state_timestamp_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def type(self) -> GroupType:
        return GroupType.CLASSIC

    def state_name(self) -> str:
        return self.state.value

    def has_members(self) -> bool:
        return bool(self.members)

    def transition_to(self, state: GroupState) -> None:
        self.state = state
        self.state_timestamp_ms = int(time.time() * 1000)

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """A joining member must speak the group's type and share a protocol with everyone."""
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        common = set.intersection(*({n for n, _ in m.protocols} for m in self.members.values()))
        return bool(common & {name for name, _ in protocols})

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member of this consumer group subscribes to ``topic`` (Kafka's
        isSubscribedToTopic); a subscription that cannot be read counts as subscribed."""
        for member in self.members.values():
            topics = (
                subscribed_topics(member.metadata_for(self.protocol_name)) if self.protocol_name else None
            )
            if topics is None or topic in topics:
                return True
        return False

    def select_protocol(self) -> str:
        """Every member votes for its most preferred protocol that all members support."""
        common = set.intersection(*({n for n, _ in m.protocols} for m in self.members.values()))
        votes = Counter(next(n for n, _ in m.protocols if n in common) for m in self.members.values())
        return votes.most_common(1)[0][0]

    def rebalance_timeout_s(self) -> float:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0) / 1000

    def all_members_joined(self) -> bool:
        """Every member rejoined and no member id handed out with MEMBER_ID_REQUIRED is
        still on its way back."""
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def static_member_id(self, group_instance_id: str) -> str | None:
        return next(
            (m.member_id for m in self.members.values() if m.group_instance_id == group_instance_id), None
        )

    def validate_member(self, member_id: str, group_instance_id: str | None) -> Member:
        """Kafka's validateMember: a request naming an instance id must come from the member
        id that instance currently has; an older one was replaced by a restart and is fenced."""
        if group_instance_id is not None:
            current = self.static_member_id(group_instance_id)
            if current is None:
                raise UnknownMemberIdError(
                    f"no member of {self.group_id} has instance id {group_instance_id!r}"
                )
            if current != member_id:
                raise FencedInstanceIdError(
                    f"{member_id} was replaced by {current} as "
                    f"instance {group_instance_id!r} of {self.group_id}"
                )
        member = self.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"{member_id!r} is not a member of {self.group_id!r}")
        return member

    def join_response(self, member_id: str) -> dict[str, Any]:
        """The current generation as JoinGroup answers it; only the leader gets the members."""
        members = []
        if member_id == self.leader_id:
            protocol = self.protocol_name
            if protocol is None:
                raise RuntimeError(f"group {self.group_id} has a leader but no protocol")
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata_for(protocol),
                }
                for m in self.members.values()
            ]
        return {
            "error_code": 0,
            "generation_id": self.generation,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "leader": self.leader_id,
            "member_id": member_id,
            "members": members,
        }

    def fail_sync_waiters(self, exc: Exception) -> None:
        for member in self.members.values():
            waiter, member.sync_waiter = member.sync_waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)

    def unload(self) -> None:
        """Kafka's onGroupUnloaded: the group is Dead, its rebalance timer is cancelled (it
        would otherwise fire after the partition is loaded again, drop the members and store
        the old generation as Empty), and its waiting members look for the new coordinator."""
        self.transition_to(GroupState.DEAD)
        task, self.rebalance_task = self.rebalance_task, None
        if task is not None:
            task.cancel()
        for member in self.members.values():
            member.fail_waiters(NotCoordinatorError())

    def metadata(self, assignments: dict[str, bytes] | None = None) -> GroupMetadata:
        """The record of this generation; ``assignments`` replaces the members' own when
        the leader's assignment is stored before it takes effect."""
        if assignments is None:
            assignments = {mid: m.assignment for mid, m in self.members.items()}
        return GroupMetadata(
            self.protocol_type or "",
            self.generation,
            self.protocol_name,
            self.leader_id,
            self.state_timestamp_ms,
            [
                MemberMetadata(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata_for(self.protocol_name) if self.protocol_name else b"",
                    assignments.get(m.member_id, b""),
                )
                for m in self.members.values()
            ],
        )

    @classmethod
    def restore(cls, group_id: str, metadata: GroupMetadata, now: float) -> ClassicGroup:
        """A group loaded from its last record: Stable with its members, whose sessions start
        now (so they keep their assignment if they heartbeat in time), or Empty."""
        group = cls(
            group_id,
            GroupState.STABLE if metadata.members else GroupState.EMPTY,
            metadata.generation,
            metadata.protocol_type or None,
            metadata.protocol,
            metadata.leader,
        )
        if metadata.current_state_timestamp >= 0:
            group.state_timestamp_ms = metadata.current_state_timestamp
        for m in metadata.members:
            member = Member(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.session_timeout_ms,
                m.rebalance_timeout_ms,
                metadata.protocol_type,
                [(metadata.protocol or "", m.subscription)],
                m.assignment,
            )
            member.restart_session(now)
            group.members[m.member_id] = member
        return group
