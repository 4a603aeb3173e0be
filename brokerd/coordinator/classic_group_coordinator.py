"""The classic group protocol (Kafka's classic group handling in its GroupMetadataManager):
JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and the member sessions.

Members join (JoinGroup), the leader's assignment is handed out (SyncGroup), heartbeats keep
sessions alive and tell members when to rejoin; a member that stops heartbeating is removed
after its session timeout. The groups live in the GroupMetadataManager, which stores each
completed generation; this module runs the rebalance state machine of classic_group.py.
Whether this broker coordinates a group, and whether the id is a classic group at all, the
GroupCoordinator has checked before a request gets here.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from kafka.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    KafkaError,
    MemberIdRequiredError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from brokerd.config import BrokerConfig
from brokerd.coordinator.classic_group import ClassicGroup, GroupState, Member
from brokerd.coordinator.group_metadata_manager import GroupMetadataManager

log = logging.getLogger(__name__)

MIN_SESSION_TIMEOUT_MS = 1000
MAX_SESSION_TIMEOUT_MS = 1_800_000

JoinResponse = dict[str, Any]


def join_error(code: int, member_id: str) -> JoinResponse:
    """A JoinGroup answer without a generation: an error, or KIP-394's MEMBER_ID_REQUIRED
    with the member id to rejoin with."""
    return {
        "error_code": code,
        "generation_id": -1,
        "protocol_name": "",
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


@dataclass(frozen=True)
class GroupConfig:
    """Kafka's GroupConfig, read once at start: the setting is not dynamic."""

    initial_rebalance_delay_ms: int  # group.initial.rebalance.delay.ms

    @classmethod
    def from_config(cls, config: BrokerConfig) -> GroupConfig:
        return cls(config.get("group.initial.rebalance.delay.ms"))


class ClassicGroupCoordinator:
    """The classic groups of ``groups``. Their sessions run on the manager's clock."""

    def __init__(self, config: GroupConfig, groups: GroupMetadataManager) -> None:
        self.initial_rebalance_delay_ms = config.initial_rebalance_delay_ms
        self.groups = groups
        self.clock = groups.clock  # session deadlines and the initial rebalance delay

    # -- membership -------------------------------------------------------------------------
    async def join(self, group_id: str, candidate: Member, requires_known_member_id: bool) -> JoinResponse:
        """Kafka's classic JoinGroup. ``candidate`` carries the request's fields; an empty
        member id is a new member: a static one (group.instance.id) takes over its instance's
        place, a dynamic one on JoinGroup v4+ is first sent back for a member id (KIP-394)."""
        if not MIN_SESSION_TIMEOUT_MS <= candidate.session_timeout_ms <= MAX_SESSION_TIMEOUT_MS:
            raise InvalidSessionTimeoutError(f"session timeout {candidate.session_timeout_ms} ms")
        group = self.groups.group_of(group_id, ClassicGroup)
        if group is None:
            if candidate.member_id:
                raise UnknownMemberIdError(f"group {group_id} does not exist")
            group = self.groups.add_group(ClassicGroup(group_id))
        if not candidate.protocols or not group.supports(candidate.protocol_type, candidate.protocols):
            raise InconsistentGroupProtocolError(f"no protocol in common with {group_id}")
        if not candidate.member_id:
            return await self._join_new_member(group, candidate, requires_known_member_id)
        if group.pending_members.pop(candidate.member_id, None) is not None:
            return await self._add_member(group, candidate)
        member = group.validate_member(candidate.member_id, candidate.group_instance_id)
        return await self._join_existing_member(group, member, candidate)

    async def _join_new_member(
        self, group: ClassicGroup, candidate: Member, requires_known_member_id: bool
    ) -> JoinResponse:
        instance_id = candidate.group_instance_id  # a static member's (KIP-345)
        prefix = instance_id if instance_id is not None else candidate.client_id
        candidate.member_id = f"{prefix}-{uuid.uuid4()}"
        if instance_id is not None:
            previous = group.static_member_id(instance_id)
            if previous is not None:
                return await self._replace_static_member(group, previous, candidate)
        elif requires_known_member_id:
            group.pending_members[candidate.member_id] = self.clock() + candidate.session_timeout_ms / 1000
            return join_error(MemberIdRequiredError.errno, candidate.member_id)
        return await self._add_member(group, candidate)

    async def _add_member(self, group: ClassicGroup, member: Member) -> JoinResponse:
        group.members[member.member_id] = member
        group.protocol_type = member.protocol_type
        return await self._await_join(group, member, f"{member.member_id} joined")

    async def _join_existing_member(
        self, group: ClassicGroup, member: Member, candidate: Member
    ) -> JoinResponse:
        """A member that rejoins with unchanged metadata while the group is CompletingRebalance
        (it lost the JoinGroup response) or Stable (a follower) gets the current generation;
        anything else, and the leader rejoining a Stable group, starts a rebalance."""
        unchanged = candidate.protocols == member.protocols
        if unchanged and (
            group.state == GroupState.COMPLETING_REBALANCE
            or group.state == GroupState.STABLE
            and member.member_id != group.leader_id
        ):
            return group.join_response(member.member_id)
        member.update_from(candidate)
        return await self._await_join(group, member, f"{member.member_id} rejoined")

    async def _replace_static_member(
        self, group: ClassicGroup, previous_id: str, candidate: Member
    ) -> JoinResponse:
        """KIP-345: a restarted static member takes over its instance's member (assignment
        included) under a new member id; the old id is fenced. In a Stable group whose
        selected protocol stays the same there is no rebalance: the new id is stored and the
        member gets the current generation. As in Kafka, the response names the leader as it
        was, so a restarted leader acts as a follower and SyncGroup returns its assignment."""
        previous = group.members.pop(previous_id)
        previous.fail_waiters(
            FencedInstanceIdError(
                f"{previous_id} was replaced by {candidate.member_id} as instance "
                f"{candidate.group_instance_id!r}"
            ),
        )
        member = Member(
            candidate.member_id,
            previous.group_instance_id,
            previous.client_id,
            previous.client_host,
            previous.session_timeout_ms,
            previous.rebalance_timeout_ms,
            previous.protocol_type,
            previous.protocols,
            previous.assignment,
        )
        group.members[member.member_id] = member
        previous_leader = group.leader_id
        if previous_leader == previous_id:
            group.leader_id = member.member_id
        member.restart_session(self.clock())
        member.update_from(candidate)
        log.info(
            "group %s: static member %r rejoined as %s, replacing %s",
            group.group_id,
            member.group_instance_id,
            member.member_id,
            previous_id,
        )
        if group.state != GroupState.STABLE or group.select_protocol() != group.protocol_name:
            return await self._await_join(
                group, member, f"static member {member.member_id} replaced {previous_id}"
            )
        try:
            await self.groups.store_group(group)
        except KafkaError:
            if group.members.get(member.member_id) is member:  # revert, as Kafka does
                del group.members[member.member_id]
                group.members[previous_id] = previous
                group.leader_id = previous_leader
            raise
        return {**group.join_response(member.member_id), "leader": previous_leader, "members": []}

    async def _await_join(self, group: ClassicGroup, member: Member, reason: str) -> JoinResponse:
        """Park the member's JoinGroup until the join phase completes: start a rebalance
        unless one is under way, then see whether everyone is in. A group unloaded while
        the join awaited a write (a static member's) is not rebalanced here any more."""
        if group.state == GroupState.DEAD:
            raise NotCoordinatorError(f"group {group.group_id} is no longer coordinated here")
        waiter: asyncio.Future[JoinResponse] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        if group.state != GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(group, reason)
        self._maybe_complete_join(group)
        return await waiter

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        """Ask every member to rejoin: heartbeats now answer REBALANCE_IN_PROGRESS."""
        if group.state == GroupState.COMPLETING_REBALANCE:
            group.fail_sync_waiters(RebalanceInProgressError())
        delay = 0.0
        if group.state == GroupState.EMPTY:  # let a starting group's members arrive together
            delay = self.initial_rebalance_delay_ms / 1000
        group.transition_to(GroupState.PREPARING_REBALANCE)
        group.join_delay_until = self.clock() + delay
        log.info("group %s rebalancing: %s", group.group_id, reason)
        self._schedule_join_deadline(group, delay)

    def _schedule_join_deadline(self, group: ClassicGroup, delay_s: float) -> None:
        if group.rebalance_task is not None:
            group.rebalance_task.cancel()
        group.rebalance_task = asyncio.create_task(self._rebalance_deadline(group, delay_s))

    async def _rebalance_deadline(self, group: ClassicGroup, delay_s: float) -> None:
        """Complete the join once the initial delay is over and everyone rejoined, or at the
        rebalance timeout, dropping the dynamic members that did not rejoin."""
        await asyncio.sleep(delay_s)
        if self._maybe_complete_join(group):
            return
        await asyncio.sleep(group.rebalance_timeout_s())
        if group.state == GroupState.PREPARING_REBALANCE:
            self._complete_join(group)

    def _maybe_complete_join(self, group: ClassicGroup) -> bool:
        if (
            group.state == GroupState.PREPARING_REBALANCE
            and self.clock() >= group.join_delay_until
            and group.all_members_joined()
        ):
            self._complete_join(group)
            return True
        return False

    def _complete_join(self, group: ClassicGroup) -> None:
        """Start the next generation with the members that rejoined. Static members that did
        not rejoin stay (they leave only by LeaveGroup or their session timeout); if only
        they are left, the join phase waits another rebalance timeout."""
        task, group.rebalance_task = group.rebalance_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        for member_id in [
            m for m, member in group.members.items() if member.join_waiter is None and not member.is_static
        ]:
            del group.members[member_id]
        joined = [m.member_id for m in group.members.values() if m.join_waiter is not None]
        if group.members and not joined:
            log.info("group %s: no member rejoined; waiting for its static members", group.group_id)
            self._schedule_join_deadline(group, 0.0)
            return
        group.generation += 1
        if not group.members:
            self._become_empty(group)
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in joined:
            group.leader_id = joined[0]
        group.transition_to(GroupState.COMPLETING_REBALANCE)
        log.info(
            "group %s generation %d: %d member(s), protocol %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol_name,
        )
        now = self.clock()
        for member in group.members.values():
            member.restart_session(now)
            waiter, member.join_waiter = member.join_waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(group.join_response(member.member_id))

    def _become_empty(self, group: ClassicGroup) -> None:
        """The last member is gone: the empty generation is stored without waiting."""
        group.transition_to(GroupState.EMPTY)
        group.leader_id = group.protocol_name = None
        self.groups.store_group_without_waiting(group)

    def _member(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation: int
    ) -> tuple[ClassicGroup, Member]:
        """The member a request comes from, which proves it is alive (its session restarts);
        UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID or ILLEGAL_GENERATION otherwise."""
        group = self.groups.group_of(group_id, ClassicGroup)
        if group is None:
            raise UnknownMemberIdError(f"group {group_id!r} does not exist")
        member = group.validate_member(member_id, group_instance_id)
        if generation != group.generation:
            raise IllegalGenerationError(f"generation {generation} is not {group.generation}")
        member.restart_session(self.clock())
        return group, member

    async def sync(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation: int,
        assignments: dict[str, bytes],
    ) -> bytes:
        group, member = self._member(group_id, member_id, group_instance_id, generation)
        if group.state == GroupState.PREPARING_REBALANCE:
            raise RebalanceInProgressError(f"group {group_id} is rebalancing")
        if group.state == GroupState.STABLE:
            return member.assignment
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        member.sync_waiter = waiter
        if member_id == group.leader_id:
            await self._store_assignment(group, {mid: assignments.get(mid, b"") for mid in group.members})
        return await waiter

    async def _store_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        """The leader's assignment is stored with the generation before any member gets its
        share, so a new coordinator knows the group as Stable. A rebalance that started
        meanwhile has already sent everyone back to JoinGroup; a failed write does too."""
        generation = group.generation

        def still_completing() -> bool:
            return (
                self.groups.get_group(group.group_id) is group
                and group.generation == generation
                and group.state == GroupState.COMPLETING_REBALANCE
            )

        try:
            await self.groups.store_group(group, assignment)
        except KafkaError as exc:
            if still_completing():
                group.fail_sync_waiters(exc)
                self._prepare_rebalance(group, f"could not store the assignment: {exc}")
            return
        if still_completing():
            group.transition_to(GroupState.STABLE)
            for member_id, member in group.members.items():
                member.assignment = assignment[member_id]
                waiter, member.sync_waiter = member.sync_waiter, None
                if waiter is not None and not waiter.done():
                    waiter.set_result(member.assignment)

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation: int
    ) -> None:
        group, _ = self._member(group_id, member_id, group_instance_id, generation)
        if group.state == GroupState.PREPARING_REBALANCE:
            raise RebalanceInProgressError(f"group {group_id} is rebalancing")

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[KafkaError | None]:
        """LeaveGroup for (member id, group instance id) pairs; each gets its own outcome.
        An empty member id with an instance id removes that static member (v3+, how admin
        tools remove a static member that will not come back)."""
        group = self.groups.group_of(group_id, ClassicGroup)
        if group is None:
            raise UnknownMemberIdError(f"group {group_id!r} does not exist")
        return [self._leave_one(group, member_id, instance_id) for member_id, instance_id in members]

    def _leave_one(
        self, group: ClassicGroup, member_id: str, group_instance_id: str | None
    ) -> KafkaError | None:
        try:
            if not member_id and group_instance_id is not None:
                static_member_id = group.static_member_id(group_instance_id)
                if static_member_id is None:
                    raise UnknownMemberIdError(
                        f"no member of {group.group_id} has instance id {group_instance_id!r}"
                    )
                member_id = static_member_id
            elif group.pending_members.pop(member_id, None) is not None:
                self._maybe_complete_join(group)
                return None
            else:
                group.validate_member(member_id, group_instance_id)
        except (UnknownMemberIdError, FencedInstanceIdError) as exc:
            return exc
        self._remove_member(group, member_id, "left the group")
        return None

    def _remove_member(self, group: ClassicGroup, member_id: str, why: str) -> None:
        member = group.members.pop(member_id)
        log.info("group %s: member %s %s", group.group_id, member_id, why)
        member.fail_waiters(UnknownMemberIdError(f"{member_id} {why}"))
        if group.state == GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        elif group.members:
            self._prepare_rebalance(group, f"{member_id} {why}")
        else:
            group.generation += 1
            self._become_empty(group)

    async def expire_sessions_on_time(self, max_wait_s: float) -> None:
        """Run expire_sessions at the next session deadline (or every ``max_wait_s``, to see
        new members), so a member is removed when its session times out, not up to a tick
        later: clients that wait out a session timeout expect the member gone (Kafka's
        DelayedHeartbeat fires at the deadline)."""
        while True:
            try:
                self.expire_sessions()
            except Exception:
                log.exception("expiring group member sessions failed")
            await asyncio.sleep(min(max(0.0, self._next_session_deadline() - self.clock()), max_wait_s))

    def _next_session_deadline(self) -> float:
        groups = self.groups.groups_of(ClassicGroup)
        deadlines = [d for g in groups for d in g.pending_members.values()]
        deadlines += [m.session_deadline for g in groups for m in g.members.values() if m.join_waiter is None]
        return min(deadlines, default=float("inf"))

    def expire_sessions(self) -> None:
        """Members that stopped heartbeating for their session timeout are removed, and so
        are member ids handed out with MEMBER_ID_REQUIRED that never came back."""
        now = self.clock()
        for group in self.groups.groups_of(ClassicGroup):
            expired = [m for m, deadline in group.pending_members.items() if now >= deadline]
            for member_id in expired:
                del group.pending_members[member_id]
            if expired:
                self._maybe_complete_join(group)
            for member_id, member in list(group.members.items()):
                if member.join_waiter is None and now >= member.session_deadline:
                    self._remove_member(group, member_id, "session timed out")

    def validate_offset_commit(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None
    ) -> None:
        """Kafka's validateOffsetCommit for a classic group: without a generation (admin
        clients, consumers that assign partitions themselves) only an empty group takes
        commits; with one, the committer must be the current member (a replaced static
        member is fenced), and its commit keeps its session alive. As in Kafka, members may
        commit while the group is PreparingRebalance (they finish their current records
        before rejoining); only CompletingRebalance, when the new assignment is not yet
        known, refuses with REBALANCE_IN_PROGRESS."""
        group = self.groups.group_of(group_id, ClassicGroup)
        if generation < 0 and (group is None or group.state == GroupState.EMPTY):
            return
        group, _ = self._member(group_id, member_id, group_instance_id, generation)
        if group.state == GroupState.COMPLETING_REBALANCE:
            raise RebalanceInProgressError(f"group {group_id} is completing a rebalance")
