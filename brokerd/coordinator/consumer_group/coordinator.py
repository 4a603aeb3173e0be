"""Kafka's consumer group coordinator for KIP-848 groups: ConsumerGroupHeartbeat's state
machine, the member sessions, and deleting a group.

A heartbeat carries what changed of the member (its subscription, what it owns); when the
membership or the subscribed topics change, the group epoch grows and the next heartbeat
computes a new target assignment with the chosen assignor; every heartbeat then moves its
member towards its target (reconciliation.py). The changes are written to the group's
``__consumer_offsets`` partition (records.py) before the heartbeat is answered, so the
coordinator that takes over after a failover has the same epochs and assignments and the
members carry on. A member that stops heartbeating for the session timeout, or does not
revoke partitions within its rebalance timeout, is fenced: removed, its partitions freed.
The groups themselves are kept with every other group, in the GroupMetadataManager.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka.errors import (
    FencedInstanceIdError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    KafkaError,
    NonEmptyGroupError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
)

from brokerd.config import BrokerConfig
from brokerd.coordinator.consumer_group import records
from brokerd.coordinator.consumer_group.assignors import ASSIGNORS, MemberSubscription
from brokerd.coordinator.consumer_group.heartbeat import (
    Heartbeat,
    HeartbeatResult,
    assignor_name,
    check_epoch,
    update_member,
    validate,
)
from brokerd.coordinator.consumer_group.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from brokerd.coordinator.consumer_group.reconciliation import reconcile
from brokerd.coordinator.consumer_group.records import ConsumerGroupRecord, Record
from brokerd.coordinator.consumer_group.subscriptions import (
    TopicMetadata,
    matching,
    resolve_regexes,
    resolved,
    subscribed_metadata,
)
from brokerd.ports import ConsumerGroupTimeouts, TopicMetadataCatalog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """The broker settings a consumer group coordinator reads once, at start."""

    assignors: tuple[str, ...]  # group.consumer.assignors; the first is the default
    max_size: int  # group.consumer.max.size

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ConsumerGroupConfig:
        names = tuple(
            n.strip().lower() for n in str(config.get("group.consumer.assignors")).split(",") if n.strip()
        )
        known = tuple(assignor_name(n) for n in names if assignor_name(n) in ASSIGNORS)
        return cls(known or ("uniform",), int(config.get("group.consumer.max.size")))


class ConsumerGroupStore(Protocol):
    """What the coordinator needs of the GroupMetadataManager: whether this broker
    coordinates a group, the consumer groups among its groups, appending a group's records
    and waiting for the in-sync replicas, and the classic group of the same id, if any."""

    def require_loaded(self, group_id: str) -> int: ...

    def group_of(self, group_id: str, kind: type[ConsumerGroup]) -> ConsumerGroup | None: ...

    def groups_of(self, kind: type[ConsumerGroup]) -> list[ConsumerGroup]: ...

    def add_group(self, group: ConsumerGroup) -> ConsumerGroup:
        """GROUP_ID_NOT_FOUND when the id holds a group of another type."""

    def restore_group(self, group: ConsumerGroup) -> None: ...

    def remove_group(self, group_id: str) -> None: ...

    async def append_records(self, group_id: str, records: Sequence[Record]) -> None: ...

    def classic_group_size(self, group_id: str) -> int | None:
        """Members of the classic group ``group_id``; None when there is no classic group."""

    def drop_classic_group(self, group_id: str) -> Record:
        """Forget the empty classic group ``group_id``; returns the tombstone to append."""


class ConsumerGroupCoordinator:
    """The consumer groups of the offsets partitions this broker leads."""

    def __init__(
        self,
        config: ConsumerGroupConfig,
        store: ConsumerGroupStore,
        topics: TopicMetadataCatalog,
        timeouts: ConsumerGroupTimeouts,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.store = store
        self.topics = topics
        self.timeouts = timeouts
        self.clock = clock

    # -- loading with the offsets partitions ------------------------------------------------------
    def load(self, partition: int, found: Iterable[ConsumerGroupRecord]) -> None:
        """A partition became ours: rebuild its groups from their records; every member's
        session starts now, so members that are gone time out as they would have."""
        loaded: dict[str, ConsumerGroup] = {}
        records.replay(loaded, found)
        now = self.clock()
        for group_id, group in loaded.items():
            for member in group.members.values():
                member.session_deadline = now + self.timeouts.consumer_session_timeout_ms(group_id) / 1000
            # Kafka stores a hash of the subscribed topics' metadata; the topics as they are
            # now stand in for it, so a failover alone does not start a new assignment.
            group.resolved_regexes = group.subscribed_regexes()
            group.subscribed_metadata = self._subscribed_metadata(group)
            self.store.restore_group(group)
        if loaded:
            log.info("loaded %d consumer group(s) from partition %d", len(loaded), partition)

    # -- the heartbeat ----------------------------------------------------------------------------
    async def heartbeat(self, request: Heartbeat) -> HeartbeatResult:
        validate(request, self.config.assignors)
        self.store.require_loaded(request.group_id)
        written: list[Record] = []
        group = self._group_for(request, written)
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return await self._leave(group, request, written)
        member, joined = self._member_for(group, request, written)
        before = (dict(member.assigned), member.member_epoch)
        regexes_resolved = resolve_regexes(group)
        subscription_changed = update_member(member, request, group.resolved_regexes)
        if subscription_changed or request.member_epoch == 0:  # a (re)joining member is stored
            written.append(records.member_metadata(group.group_id, member))
        metadata = self._subscribed_metadata(group)
        if joined or subscription_changed or regexes_resolved or metadata != group.subscribed_metadata:
            group.group_epoch += 1
            written.append(records.group_metadata(group))
        if group.group_epoch > group.assignment_epoch:
            written += self._assign(group, metadata)
        owners = group.owner_epochs(excluding=member.member_id)
        reconcile(
            member,
            group.assignment_epoch,
            group.target.get(member.member_id, {}),
            lambda t, p: owners.get((t, p)),
            request.owned,
        )
        now = self.clock()
        member.session_deadline = now + self.timeouts.consumer_session_timeout_ms(group.group_id) / 1000
        member.revocation_deadline = (
            (member.revocation_deadline or now + max(member.rebalance_timeout_ms, 0) / 1000)
            if member.state == MemberState.UNREVOKED_PARTITIONS
            else None
        )
        if (dict(member.assigned), member.member_epoch) != before or request.member_epoch == 0:
            written.append(records.current_member_assignment(group.group_id, member))
        await self.store.append_records(group.group_id, written)
        full = request.member_epoch == 0 or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.owned is not None
        )
        changed = dict(member.assigned) != before[0]
        return HeartbeatResult(
            member.member_id,
            member.member_epoch,
            self.timeouts.consumer_heartbeat_interval_ms(group.group_id),
            dict(member.assigned) if full or changed else None,
        )

    def _group_for(self, request: Heartbeat, written: list[Record]) -> ConsumerGroup:
        """The consumer group, created on a first join; an empty classic group of the id is
        converted (its offsets stay), a classic one with members is refused."""
        group_id = request.group_id
        group = self.store.group_of(group_id, ConsumerGroup)
        if group is not None:
            return group
        classic = self.store.classic_group_size(group_id)
        if classic:
            raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
        if request.member_epoch != 0:
            raise GroupIdNotFoundError(f"Consumer group {group_id} not found.")
        if classic is not None:
            written.append(self.store.drop_classic_group(group_id))
            log.info("group %s: empty classic group converted to a consumer group", group_id)
        return self.store.add_group(ConsumerGroup(group_id))

    def _member_for(
        self, group: ConsumerGroup, request: Heartbeat, written: list[Record]
    ) -> tuple[ConsumerGroupMember, bool]:
        """The member the heartbeat comes from, and whether it is new to the group (a reason
        to compute a new assignment; a static member taking its place back is not)."""
        member_id = request.member_id
        if request.member_epoch == 0:
            if request.instance_id is not None:
                return self._join_static(group, request, written)
            member = group.members.get(member_id) if member_id else None
            joined = member is None
            if member is None:
                self._check_size(group)
                member_id = member_id or _new_member_id()
                member = group.members[member_id] = ConsumerGroupMember(member_id)
                log.info("group %s: member %s joined", group.group_id, member_id)
            else:  # rejoining: it owns nothing any more
                member.assigned, member.pending_revocation = {}, {}
                member.state = MemberState.STABLE
            member.member_epoch = 0
            member.client_id, member.client_host = request.client_id, request.client_host
            return member, joined
        member = group.members.get(member_id)
        if request.instance_id is not None:
            static_id = group.static_member_id(request.instance_id)
            if static_id is None:
                raise UnknownMemberIdError(f"Instance id {request.instance_id} is unknown.")
            if static_id != member_id:
                raise FencedInstanceIdError(
                    f"The static member {member_id} with instance id {request.instance_id} is fenced "
                    f"by existing member {static_id}."
                )
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
        check_epoch(member, request)
        return member, False

    def _join_static(
        self, group: ConsumerGroup, request: Heartbeat, written: list[Record]
    ) -> tuple[ConsumerGroupMember, bool]:
        """KIP-345 for consumer groups: a static member that left with epoch -2 is taken
        over by the instance's new member id, with its epoch and assignment, and no new
        assignment is computed; an instance id another live member holds is refused."""
        instance_id = request.instance_id
        assert instance_id is not None
        member_id = request.member_id or _new_member_id()
        existing_id = group.static_member_id(instance_id)
        if existing_id is None:
            self._check_size(group)
            member = group.members[member_id] = ConsumerGroupMember(member_id, instance_id)
            member.client_id, member.client_host = request.client_id, request.client_host
            return member, True
        existing = group.members[existing_id]
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise UnreleasedInstanceIdError(
                f"Static member {member_id} with instance id {instance_id} cannot join the group because "
                f"the instance id is owned by {existing_id} member."
            )
        del group.members[existing_id]
        existing.member_id = member_id
        existing.member_epoch = 0  # reconciles back to the target it keeps
        existing.client_id, existing.client_host = request.client_id, request.client_host
        group.members[member_id] = existing
        if existing_id != member_id:
            written += records.member_tombstones(group.group_id, existing_id)
        if existing_id in group.target:
            group.target[member_id] = group.target.pop(existing_id)
            written.append(
                records.target_assignment_member(group.group_id, member_id, group.target[member_id])
            )
        log.info("group %s: static member %s rejoined as %s", group.group_id, instance_id, member_id)
        return existing, False

    def _check_size(self, group: ConsumerGroup) -> None:
        if len(group.members) >= self.config.max_size:
            raise GroupMaxSizeReachedError(
                f"The consumer group has reached its maximum capacity of {self.config.max_size} members."
            )

    async def _leave(
        self, group: ConsumerGroup, request: Heartbeat, written: list[Record]
    ) -> HeartbeatResult:
        member_id = request.member_id
        member = group.members.get(member_id)
        if member is None and request.instance_id is not None:
            static_id = group.static_member_id(request.instance_id)
            member = group.members.get(static_id) if static_id else None
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
        interval = self.timeouts.consumer_heartbeat_interval_ms(group.group_id)
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # It comes back soon under a new member id and takes its partitions back.
            if member.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                member.previous_member_epoch = member.member_epoch
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            written.append(records.current_member_assignment(group.group_id, member))
            await self.store.append_records(group.group_id, written)
            log.info("group %s: static member %s left temporarily", group.group_id, member.member_id)
            return HeartbeatResult(member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, interval, None)
        written += self._remove_member(group, member, "left the group")
        await self.store.append_records(group.group_id, written)
        return HeartbeatResult(member_id, LEAVE_GROUP_MEMBER_EPOCH, interval, None)

    def _remove_member(self, group: ConsumerGroup, member: ConsumerGroupMember, why: str) -> list[Record]:
        """The member goes and the group epoch grows: the next heartbeat of the others
        computes a target assignment without it. Returns the records to write."""
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        group.group_epoch += 1
        log.info(
            "group %s: member %s %s (group epoch %d)",
            group.group_id,
            member.member_id,
            why,
            group.group_epoch,
        )
        return records.member_tombstones(group.group_id, member.member_id) + [records.group_metadata(group)]

    # -- the target assignment --------------------------------------------------------------------
    def _subscribed_metadata(self, group: ConsumerGroup) -> TopicMetadata:
        return subscribed_metadata(group, self.topics.topic_partitions())

    def _assign(self, group: ConsumerGroup, metadata: TopicMetadata) -> list[Record]:
        catalog = self.topics.topic_partitions()
        subscriptions = []
        for member in group.members.values():
            names = set(member.subscribed_topic_names) | matching(resolved(group, member), catalog)
            subscriptions.append(
                MemberSubscription(
                    member.member_id, frozenset(metadata[n][0] for n in names if n in metadata)
                )
            )
        chosen = self.assignor(group)
        counts = {topic_id: partitions for topic_id, partitions in metadata.values()}
        target = ASSIGNORS[chosen](subscriptions, counts, group.target)
        written: list[Record] = []
        for member_id, assignment in target.items():
            if group.target.get(member_id) != assignment or member_id not in group.target:
                written.append(records.target_assignment_member(group.group_id, member_id, assignment))
        group.target = target
        group.assignment_epoch = group.group_epoch
        group.subscribed_metadata = metadata
        written.append(records.target_assignment_metadata(group))
        log.info(
            "group %s: target assignment for epoch %d by %s over %d member(s)",
            group.group_id,
            group.assignment_epoch,
            chosen,
            len(target),
        )
        return written

    def assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for (ties: the broker's order), else the default."""
        wanted = [m.server_assignor for m in group.members.values() if m.server_assignor]
        if not wanted:
            return self.config.assignors[0]
        return max(self.config.assignors, key=lambda a: (wanted.count(a), -self.config.assignors.index(a)))

    # -- sessions ---------------------------------------------------------------------------------
    async def expire_sessions_on_time(self, max_wait_s: float) -> None:
        """Fence members at their session or revocation deadline (or look every
        ``max_wait_s``)."""
        while True:
            try:
                await self.expire_sessions()
            except Exception:
                log.exception("expiring consumer group member sessions failed")
            deadlines = [
                d
                for g in self.store.groups_of(ConsumerGroup)
                for m in g.members.values()
                for d in (m.session_deadline, m.revocation_deadline)
                if d is not None
            ]
            await asyncio.sleep(
                min(max(0.0, min(deadlines, default=float("inf")) - self.clock()), max_wait_s)
            )

    async def expire_sessions(self) -> None:
        now = self.clock()
        for group in self.store.groups_of(ConsumerGroup):
            written: list[Record] = []
            for member in list(group.members.values()):
                if now >= member.session_deadline:
                    written += self._remove_member(group, member, "was fenced: its session timed out")
                elif member.revocation_deadline is not None and now >= member.revocation_deadline:
                    written += self._remove_member(
                        group, member, "was fenced: it did not revoke its partitions in time"
                    )
            if written:
                try:
                    await self.store.append_records(group.group_id, written)
                except KafkaError as exc:
                    log.warning("group %s: could not store fenced members: %s", group.group_id, exc)

    # -- deleting -----------------------------------------------------------------------------------
    async def delete(self, group_id: str) -> None:
        """DeleteGroups of a consumer group: only without members."""
        group = self.store.group_of(group_id, ConsumerGroup)
        if group is None:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        if group.members:
            raise NonEmptyGroupError(f"Group {group_id} is not empty.")
        written: list[Record] = []
        for member_id in list(group.target):
            written += records.member_tombstones(group_id, member_id)
        await self.store.append_records(group_id, written + records.group_tombstones(group_id))
        self.store.remove_group(group_id)


# -- helpers ----------------------------------------------------------------------------------------
def _new_member_id() -> str:
    """A member id as Kafka makes one (Uuid.randomUuid().toString(): base64url, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
