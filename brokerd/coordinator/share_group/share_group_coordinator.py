"""The share group protocol (Kafka's share group handling in its GroupMetadataManager):
ShareGroupHeartbeat joins (member epoch 0), heartbeats and leaves (-1); the group epoch rises
with every change, the SimpleAssignor computes the target assignment at the new epoch, and
members take it on their next heartbeat (a share group revokes nothing, partitions are
shared). A member that does not heartbeat within group.share.session.timeout.ms is fenced.

A share group is coordinated, like a consumer group, by the leader of its partition of
__consumer_offsets. Membership is kept in memory only: after a coordinator change members
are told UNKNOWN_MEMBER_ID and join again (their records' state lives with the share
partitions, persisted apart, so nothing delivered is lost by it). The groups are kept with
every other group, in the GroupMetadataManager.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafka.errors import (
    FencedMemberEpochError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    UnknownMemberIdError,
)

from brokerd.config import BrokerConfig
from brokerd.coordinator.share_group.assignor import Assignment, assign
from brokerd.coordinator.share_group.share_group import ShareGroup, ShareMember
from brokerd.ports import ShareGroupTimeouts, TopicPartitionCounts

log = logging.getLogger(__name__)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
FENCED = "was fenced (session timed out)"


@dataclass(frozen=True)
class ShareGroupConfig:
    """Broker-wide settings; the session timeout and heartbeat interval may be set per
    group (a ShareGroupTimeouts port gives them), these are the defaults then."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ShareGroupConfig:
        return cls(
            config.get("group.share.session.timeout.ms"),
            config.get("group.share.heartbeat.interval.ms"),
            config.get("group.share.max.size"),
        )

    def share_session_timeout_ms(self, group_id: str) -> int:
        return self.session_timeout_ms

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return self.heartbeat_interval_ms


class ShareGroupStore(Protocol):
    """What the coordinator needs of the GroupMetadataManager: whether this broker
    coordinates a group id (the leader of its __consumer_offsets partition), and the share
    groups among its groups."""

    def require_loaded(self, group_id: str) -> int: ...

    def group_of(self, group_id: str, kind: type[ShareGroup]) -> ShareGroup | None: ...

    def groups_of(self, kind: type[ShareGroup]) -> list[ShareGroup]: ...

    def add_group(self, group: ShareGroup) -> ShareGroup:
        """GROUP_ID_NOT_FOUND when the id holds a group of another type."""


@dataclass(frozen=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None: unchanged since the member was last told


class ShareGroupCoordinator:
    def __init__(
        self,
        config: ShareGroupConfig,
        store: ShareGroupStore,
        topics: TopicPartitionCounts,
        timeouts: ShareGroupTimeouts | None = None,
        clock: Callable[[], float] = time.monotonic,
        member_removed: Callable[[str, str], None] = lambda group_id, member_id: None,
    ) -> None:
        self.config = config
        self._timeouts: ShareGroupTimeouts = timeouts or config
        self.store = store
        self._topics = topics
        self._clock = clock
        # told of every member fenced for its session timeout (group id, member id): the
        # share partitions led here release what it held at once instead of waiting for its
        # locks. Not of a member that leaves: it closes its share sessions itself, and its
        # last acknowledgements may reach a leader after its leave reached the coordinator
        self._member_removed = member_removed

    # -- ShareGroupHeartbeat -----------------------------------------------------------------
    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topics: list[str] | None,
        client_id: str,
        client_host: str,
    ) -> HeartbeatResult:
        self.store.require_loaded(group_id)
        if member_epoch == LEAVE_EPOCH:
            return self._leave(group_id, member_id)
        group = self.store.group_of(group_id, ShareGroup)
        if member_epoch == JOIN_EPOCH:
            if not subscribed_topics:
                raise InvalidRequestError("SubscribedTopicNames must be set in first request")
            group = group or self.store.add_group(ShareGroup(group_id))
            member = group.members.get(member_id) if member_id else None
            if member is None:
                if len(group.members) >= self.config.max_size:
                    raise GroupMaxSizeReachedError(
                        f"The share group has reached its maximum capacity of {self.config.max_size} members."
                    )
                member = ShareMember(member_id or str(uuid.uuid4()), client_id, client_host, rack_id, set())
                group.members[member.member_id] = member
                group.group_epoch += 1
            member.sent_assignment = None  # a (re)joining member is told its assignment
        else:
            member = group.members.get(member_id) if group is not None else None
            if group is None or member is None:
                raise UnknownMemberIdError(f"Member {member_id} is not a member of share group {group_id}.")
            if member_epoch not in (member.member_epoch, member.previous_member_epoch):
                raise FencedMemberEpochError(
                    f"The share group member has a different epoch ({member_epoch}) than the one known "
                    f"by the group coordinator ({member.member_epoch})."
                )
        if subscribed_topics is not None and set(subscribed_topics) != member.subscribed_topics:
            member.subscribed_topics = set(subscribed_topics)
            group.group_epoch += 1
        member.rack_id = rack_id if rack_id is not None else member.rack_id
        member.client_id, member.client_host = client_id, client_host
        member.session_deadline_s = self._clock() + self._timeouts.share_session_timeout_ms(group_id) / 1000
        self._update_target(group)
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.assignment = group.target.get(member.member_id, {})
        changed = member.sent_assignment != member.assignment
        member.sent_assignment = member.assignment
        return HeartbeatResult(
            member.member_id,
            member.member_epoch,
            self._timeouts.share_heartbeat_interval_ms(group_id),
            member.assignment if changed else None,
        )

    def _leave(self, group_id: str, member_id: str) -> HeartbeatResult:
        group = self.store.group_of(group_id, ShareGroup)
        if group is None or member_id not in group.members:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of share group {group_id}.")
        self._remove(group, member_id, "left")
        return HeartbeatResult(
            member_id, LEAVE_EPOCH, self._timeouts.share_heartbeat_interval_ms(group_id), None
        )

    def _remove(self, group: ShareGroup, member_id: str, why: str) -> None:
        del group.members[member_id]
        group.group_epoch += 1
        self._update_target(group)
        log.info(
            "share group %s: member %s %s, group epoch %d", group.group_id, member_id, why, group.group_epoch
        )
        if why == FENCED:
            self._member_removed(group.group_id, member_id)

    def _update_target(self, group: ShareGroup) -> None:
        """A new target assignment when the group epoch rose or a subscribed topic's
        partitions changed (a topic created or grown after members subscribed to it)."""
        counts = {}
        for topic in group.subscribed_topics():
            count = self._topics.partition_count(topic)
            if count is not None:
                counts[topic] = count
        if counts != group.partition_counts:
            group.partition_counts = counts
            if group.assignment_epoch == group.group_epoch:
                group.group_epoch += 1
        if group.assignment_epoch == group.group_epoch:
            return
        group.target = assign({m.member_id: m.subscribed_topics for m in group.members.values()}, counts)
        group.assignment_epoch = group.group_epoch

    # -- session timeouts ----------------------------------------------------------------------
    def expire_sessions(self) -> None:
        """Fence members whose session ran out (group.share.session.timeout.ms)."""
        now = self._clock()
        for group in self.store.groups_of(ShareGroup):
            for member in list(group.members.values()):
                if member.session_deadline_s <= now:
                    self._remove(group, member.member_id, FENCED)

    async def expire_sessions_on_time(self, tick_s: float) -> None:
        while True:
            await asyncio.sleep(tick_s)
            try:
                self.expire_sessions()
            except Exception:
                log.exception("share group session expiry failed")

    # -- describing ----------------------------------------------------------------------------
    def describe(self, group_id: str) -> ShareGroup | None:
        """The group, when this broker coordinates it (NOT_COORDINATOR otherwise)."""
        self.store.require_loaded(group_id)
        group = self.store.group_of(group_id, ShareGroup)
        if group is not None:
            self._update_target(group)
        return group
