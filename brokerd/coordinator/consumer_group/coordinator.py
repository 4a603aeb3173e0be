"""Kafka's consumer group coordinator for KIP-848 groups: ConsumerGroupHeartbeat's state
machine, the member sessions, and what OffsetCommit and the admin APIs need of it.

A heartbeat carries what changed of the member (its subscription, what it owns); when the
membership or the subscribed topics change, the group epoch grows and the next heartbeat
computes a new target assignment with the chosen assignor; every heartbeat then moves its
member towards its target (reconciliation.py). The changes are written to the group's
``__consumer_offsets`` partition (records.py) before the heartbeat is answered, so the
coordinator that takes over after a failover has the same epochs and assignments and the
members carry on. A member that stops heartbeating for the session timeout, or does not
revoke partitions within its rebalance timeout, is fenced: removed, its partitions freed.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import re2
from kafka.errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    KafkaError,
    NonEmptyGroupError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)

from brokerd.config import BrokerConfig
from brokerd.coordinator.consumer_group import records
from brokerd.coordinator.consumer_group.assignors import ASSIGNORS, MemberSubscription
from brokerd.coordinator.consumer_group.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    MemberState,
)
from brokerd.coordinator.consumer_group.reconciliation import reconcile
from brokerd.coordinator.consumer_group.records import ConsumerGroupRecord, Record

log = logging.getLogger(__name__)

INTERNAL_TOPIC_PREFIX = "__"  # internal topics never match a regex subscription


class InvalidRegularExpressionError(KafkaError):
    errno = 128
    message = "INVALID_REGULAR_EXPRESSION"
    description = "The regular expression is not valid."


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
        known = tuple(_assignor_name(n) for n in names if _assignor_name(n) in ASSIGNORS)
        return cls(known or ("uniform",), int(config.get("group.consumer.max.size")))


def _assignor_name(name: str) -> str:
    """Kafka accepts the assignors' short names or their class names."""
    short = name.rsplit(".", 1)[-1].lower()
    return {"uniformassignor": "uniform", "rangeassignor": "range"}.get(short, short)


class GroupsLog(Protocol):
    """What the coordinator needs of the ``__consumer_offsets`` partitions (the
    GroupMetadataManager): whether it leads a group's partition, appending a group's records
    and waiting for the in-sync replicas, and the classic group of the same id, if any."""

    def require_loaded(self, key: str) -> int: ...

    async def append_records(self, group_id: str, records: Sequence[Record]) -> None: ...

    def classic_group_size(self, group_id: str) -> int | None:
        """Members of the classic group ``group_id``; None when there is no classic group."""

    def drop_classic_group(self, group_id: str) -> Record:
        """Forget the empty classic group ``group_id``; returns the tombstone to append."""


class TopicCatalog(Protocol):
    def topic_partitions(self) -> Mapping[str, tuple[uuid.UUID, int]]:
        """Every topic: name -> (topic id, partition count)."""


class GroupTimeouts(Protocol):
    """The group configs in effect (brokerd.group_configs.GroupConfigs)."""

    def consumer_session_timeout_ms(self, group_id: str) -> int: ...

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int: ...


@dataclass
class Heartbeat:
    """A ConsumerGroupHeartbeat as the coordinator takes it (None: unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


@dataclass
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None: unchanged since the last answer


class ConsumerGroupCoordinator:
    """The consumer groups of the offsets partitions this broker leads."""

    def __init__(
        self,
        config: ConsumerGroupConfig,
        groups_log: GroupsLog,
        topics: TopicCatalog,
        timeouts: GroupTimeouts,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.log = groups_log
        self.topics = topics
        self.timeouts = timeouts
        self.clock = clock
        self.groups: dict[str, ConsumerGroup] = {}

    # -- loading and unloading with the offsets partitions ---------------------------------------
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
            self.groups[group_id] = group
        if loaded:
            log.info("loaded %d consumer group(s) from partition %d", len(loaded), partition)

    def unload(self, partition_of: Callable[[str], int], partition: int) -> None:
        for group_id in [g for g in self.groups if partition_of(g) == partition]:
            del self.groups[group_id]

    # -- the heartbeat ----------------------------------------------------------------------------
    async def heartbeat(self, request: Heartbeat) -> HeartbeatResult:
        _validate(request, self.config.assignors)
        self.log.require_loaded(request.group_id)
        written: list[Record] = []
        group = self._group_for(request, written)
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return await self._leave(group, request, written)
        member, joined = self._member_for(group, request, written)
        before = (dict(member.assigned), member.member_epoch)
        regexes_resolved = _resolve_regexes(group)
        subscription_changed = _update_member(member, request, group.resolved_regexes)
        if subscription_changed or request.member_epoch == 0:  # a (re)joining member is stored
            written.append(records.member_metadata(group.group_id, member))
        metadata = self._subscribed_metadata(group)
        if joined or subscription_changed or regexes_resolved or metadata != group.subscribed_metadata:
            group.group_epoch += 1
            written.append(records.group_metadata(group))
        if group.group_epoch > group.assignment_epoch:
            written += self._assign(group, metadata)
        owners = _owners_except(group, member.member_id)
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
        await self.log.append_records(group.group_id, written)
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
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self.log.classic_group_size(group_id)
        if classic:
            raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
        if request.member_epoch != 0:
            raise GroupIdNotFoundError(f"Consumer group {group_id} not found.")
        if classic is not None:
            written.append(self.log.drop_classic_group(group_id))
            log.info("group %s: empty classic group converted to a consumer group", group_id)
        group = self.groups[group_id] = ConsumerGroup(group_id)
        return group

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
        _check_epoch(member, request)
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
            await self.log.append_records(group.group_id, written)
            log.info("group %s: static member %s left temporarily", group.group_id, member.member_id)
            return HeartbeatResult(member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, interval, None)
        written += self._remove_member(group, member, "left the group")
        await self.log.append_records(group.group_id, written)
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
    def _subscribed_metadata(self, group: ConsumerGroup) -> dict[str, tuple[uuid.UUID, int]]:
        """The topics some member subscribes to (by name or regex) that exist, with their ids
        and partition counts: a change of these is a reason to assign again."""
        catalog = self.topics.topic_partitions()
        names = set(group.subscribed_topic_names())
        for member in group.members.values():
            names |= _matching(_resolved(group, member), catalog)
        return {name: catalog[name] for name in sorted(names) if name in catalog}

    def _assign(self, group: ConsumerGroup, metadata: dict[str, tuple[uuid.UUID, int]]) -> list[Record]:
        catalog = self.topics.topic_partitions()
        subscriptions = []
        for member in group.members.values():
            names = set(member.subscribed_topic_names) | _matching(_resolved(group, member), catalog)
            subscriptions.append(
                MemberSubscription(
                    member.member_id, frozenset(metadata[n][0] for n in names if n in metadata)
                )
            )
        assignor_name = self._assignor(group)
        counts = {topic_id: partitions for topic_id, partitions in metadata.values()}
        target = ASSIGNORS[assignor_name](subscriptions, counts, group.target)
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
            assignor_name,
            len(target),
        )
        return written

    def _assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for (ties: the broker's order), else the default."""
        wanted = [m.server_assignor for m in group.members.values() if m.server_assignor]
        if not wanted:
            return self.config.assignors[0]
        return max(self.config.assignors, key=lambda a: (wanted.count(a), -self.config.assignors.index(a)))

    def assignor_name(self, group: ConsumerGroup) -> str:
        return self._assignor(group)

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
                for g in self.groups.values()
                for m in g.members.values()
                for d in (m.session_deadline, m.revocation_deadline)
                if d is not None
            ]
            await asyncio.sleep(
                min(max(0.0, min(deadlines, default=float("inf")) - self.clock()), max_wait_s)
            )

    async def expire_sessions(self) -> None:
        now = self.clock()
        for group in list(self.groups.values()):
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
                    await self.log.append_records(group.group_id, written)
                except KafkaError as exc:
                    log.warning("group %s: could not store fenced members: %s", group.group_id, exc)

    # -- what other APIs need ---------------------------------------------------------------------
    def get(self, group_id: str) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def keeps_offsets_of(self, group_id: str) -> Callable[[str], bool] | None:
        """Offset retention: a consumer group with members keeps the offsets of the topics it
        subscribes to (KIP-211, as for classic consumer groups)."""
        group = self.groups.get(group_id)
        if group is None or not group.members:
            return None
        return group.is_subscribed_to

    def describe(self, group_id: str) -> ConsumerGroup:
        """ConsumerGroupDescribe: NOT_COORDINATOR unless the group is ours, GROUP_ID_NOT_FOUND
        unless it is a consumer group (a client then asks DescribeGroups)."""
        self.log.require_loaded(group_id)
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if self.log.classic_group_size(group_id) is not None:
            raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
        raise GroupIdNotFoundError(f"Group {group_id} not found.")

    def validate_offset_commit(self, group_id: str, member_id: str, member_epoch: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetCommit: an admin commit (no member, epoch < 0)
        only into an empty group; a member's with its current epoch."""
        group = self.groups[group_id]
        if member_epoch < 0 and not member_id and not group.members:
            return
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group_id}.")
        if member_epoch != member.member_epoch:
            raise StaleMemberEpochError(
                f"The received member epoch {member_epoch} does not match the expected member epoch "
                f"{member.member_epoch}."
            )

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        """OffsetFetch v9+: a member fetching with its epoch must have the current one."""
        group = self.groups.get(group_id)
        if group is None or not member_id or member_epoch < 0:
            return
        self.validate_offset_commit(group_id, member_id, member_epoch)

    async def delete(self, group_id: str) -> None:
        """DeleteGroups of a consumer group: only without members."""
        group = self.groups.get(group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        if group.members:
            raise NonEmptyGroupError(f"Group {group_id} is not empty.")
        written: list[Record] = []
        for member_id in list(group.target):
            written += records.member_tombstones(group_id, member_id)
        await self.log.append_records(group_id, written + records.group_tombstones(group_id))
        self.groups.pop(group_id, None)

    def list_groups(self) -> list[tuple[str, ConsumerGroupState]]:
        return sorted((g.group_id, g.state()) for g in self.groups.values())


# -- helpers ----------------------------------------------------------------------------------------
def _validate(request: Heartbeat, assignors: tuple[str, ...]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    if not request.group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    if request.version >= 1 and not request.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if request.version == 0 and request.member_epoch != 0 and not request.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if request.instance_id is not None and not request.instance_id:
        raise InvalidRequestError("InstanceId can't be empty.")
    if request.rack_id is not None and not request.rack_id:
        raise InvalidRequestError("RackId can't be empty.")
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise InvalidRequestError(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            )
    elif request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise InvalidRequestError("InstanceId can't be null.")
    elif request.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise InvalidRequestError("MemberEpoch is invalid.")
    if request.server_assignor is not None and _assignor_name(request.server_assignor) not in assignors:
        raise UnsupportedAssignorError(
            f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
            + ", ".join(assignors)
            + "."
        )
    if request.subscribed_topic_regex is not None:
        try:
            _topic_regex(request.subscribed_topic_regex)
        except re2.error as exc:
            reason = exc.args[0].decode() if isinstance(exc.args[0], bytes) else exc.args[0]
            raise InvalidRegularExpressionError(
                f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a valid regular "
                f"expression: {reason}."
            ) from None


def _check_epoch(member: ConsumerGroupMember, request: Heartbeat) -> None:
    """Kafka's throwIfMemberEpochIsInvalid: a member ahead of us, or behind us other than
    by a lost answer (previous epoch, owning a subset of what it has), must rejoin."""
    received = request.member_epoch
    if received > member.member_epoch:
        raise FencedMemberEpochError(
            f"The consumer group member has a greater epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
        )
    if received < member.member_epoch:
        owned = request.owned
        subset = owned is not None and all(
            partitions <= member.assigned.get(topic_id, frozenset()) for topic_id, partitions in owned.items()
        )
        if received != member.previous_member_epoch or not subset:
            raise FencedMemberEpochError(
                f"The consumer group member has a smaller epoch ({received}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
            )


def _resolve_regexes(group: ConsumerGroup) -> bool:
    """Resolve the regular expressions members subscribed to since the last heartbeat, and
    forget those no member subscribes to any more (Kafka's regex tombstone). True when one was
    resolved: its member's topics changed, a reason to assign again even if another member
    already had them."""
    subscribed = group.subscribed_regexes()
    new = subscribed - group.resolved_regexes
    group.resolved_regexes = subscribed
    if new:
        log.info("group %s: resolved regular expression(s) %s", group.group_id, ", ".join(sorted(new)))
    return bool(new)


def _resolved(group: ConsumerGroup, member: ConsumerGroupMember) -> str | None:
    """The member's regex once the group has resolved it; until then it brings no topics."""
    regex = member.subscribed_topic_regex
    return regex if regex in group.resolved_regexes else None


def _update_member(member: ConsumerGroupMember, request: Heartbeat, resolved_regexes: set[str]) -> bool:
    """Take what the heartbeat changed; True when the subscription did (a reason to assign).
    A regex no member had before brings its topics only once resolved, after this heartbeat
    (Kafka resolves it in the background), so it is no reason to assign yet."""
    changed = False
    if request.rack_id is not None:
        member.rack_id = request.rack_id
    if request.rebalance_timeout_ms != -1:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
    if request.instance_id is not None:
        member.instance_id = request.instance_id
    if request.subscribed_topic_names is not None:
        names = sorted(set(request.subscribed_topic_names))
        changed |= names != member.subscribed_topic_names
        member.subscribed_topic_names = names
    if request.subscribed_topic_regex is not None:
        regex = request.subscribed_topic_regex or None
        if regex != member.subscribed_topic_regex:
            changed |= regex is None or regex in resolved_regexes or member.subscribed_topic_regex is not None
        member.subscribed_topic_regex = regex
    if request.server_assignor is not None:
        assignor = _assignor_name(request.server_assignor)
        changed |= assignor != member.server_assignor
        member.server_assignor = assignor
    return changed


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # an invalid regex is the client's error, answered, not logged


def _topic_regex(regex: str):
    """Kafka compiles a subscription regex with RE2J, in time linear in the topic name
    whatever the pattern; a backtracking engine would let one client's ``(a+)+$`` hold the
    coordinator for minutes on a 30-character topic name. RE2 is that engine and syntax."""
    return re2.compile(regex, _RE2_OPTIONS)


def _matching(regex: str | None, catalog: Mapping[str, object]) -> set[str]:
    if not regex:
        return set()
    try:
        pattern = _topic_regex(regex)
    except re2.error:
        return set()
    return {
        name for name in catalog if not name.startswith(INTERNAL_TOPIC_PREFIX) and pattern.fullmatch(name)
    }


def _owners_except(group: ConsumerGroup, member_id: str) -> dict[tuple[uuid.UUID, int], int]:
    owners: dict[tuple[uuid.UUID, int], int] = {}
    for other in group.members.values():
        if other.member_id == member_id:
            continue
        for assignment in (other.assigned, other.pending_revocation):
            for topic_id, partitions in assignment.items():
                for partition in partitions:
                    owners[(topic_id, partition)] = other.member_epoch
    return owners


def _new_member_id() -> str:
    """A member id as Kafka makes one (Uuid.randomUuid().toString(): base64url, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
