"""The group coordinator the request handlers use (Kafka's GroupCoordinatorService, with the
part of its shards that loads a partition): one object for every group API, classic,
consumer (KIP-848) and share (KIP-932), and for committed offsets.

The coordinator of a group is the leader of its ``__consumer_offsets`` partition. Each
request is checked for that first (NOT_COORDINATOR), then the group its id holds here decides
which protocol answers it, once: the classic one (classic_group_coordinator.py), the consumer
one (consumer_group/), the share one (share_group/). The groups are the
GroupMetadataManager's, the offsets the OffsetMetadataManager's; both are built, with the
protocols, in the order they depend on each other (``create``), and nothing is wired in later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from kafka.errors import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    KafkaError,
    NonEmptyGroupError,
)

from brokerd.config import BrokerConfig
from brokerd.coordinator.classic_group import ClassicGroup, GroupState, Member
from brokerd.coordinator.classic_group_coordinator import ClassicGroupCoordinator, GroupConfig, JoinResponse
from brokerd.coordinator.consumer_group.coordinator import ConsumerGroupConfig, ConsumerGroupCoordinator
from brokerd.coordinator.consumer_group.heartbeat import Heartbeat, HeartbeatResult
from brokerd.coordinator.consumer_group.model import ConsumerGroup
from brokerd.coordinator.consumer_group.records import ConsumerGroupRecord
from brokerd.coordinator.group_metadata_manager import GroupMetadataManager
from brokerd.coordinator.group_types import CONSUMER_PROTOCOL_TYPE, GroupType
from brokerd.coordinator.offset_metadata_manager import OffsetConfig, OffsetMetadataManager, Offsets
from brokerd.coordinator.offsets_partitions import OffsetsPartitions
from brokerd.coordinator.offsets_topic import CommittedOffset, GroupMetadata
from brokerd.coordinator.share_group.share_group import ShareGroup
from brokerd.coordinator.share_group.share_group_coordinator import (
    JOIN_EPOCH,
    ShareGroupConfig,
    ShareGroupCoordinator,
)
from brokerd.coordinator.share_group.share_group_coordinator import HeartbeatResult as ShareHeartbeatResult
from brokerd.group_configs import GroupConfigs
from brokerd.ports import GroupsMetadata, HostedReplica, HostedReplicas, TopicPartition

log = logging.getLogger(__name__)

# ListGroups' row: group id, protocol type, state, group type
ListedGroup = tuple[str, str, str, str]


class GroupCoordinator:
    """Every group API, on the coordinator of the group: ownership first, then the group
    type, then that protocol (or the offsets)."""

    def __init__(
        self,
        partitions: OffsetsPartitions,
        groups: GroupMetadataManager,
        offsets: OffsetMetadataManager,
        classic: ClassicGroupCoordinator,
        consumer: ConsumerGroupCoordinator,
        share: ShareGroupCoordinator,
        configs: GroupConfigs,
    ) -> None:
        self._partitions = partitions
        self._groups = groups
        self._offsets = offsets
        self._classic = classic
        self._consumer = consumer
        self._share = share
        self.configs = configs  # consumer and share group configs in effect

    @classmethod
    def create(
        cls,
        broker_id: int,
        config: BrokerConfig,
        replicas: HostedReplicas,
        metadata: GroupsMetadata,
        configs: GroupConfigs,
        share_member_removed: Callable[[str, str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> GroupCoordinator:
        """The coordinator and its parts, each given what it depends on, in that order.
        ``share_member_removed`` is told of every share group member fenced for its session."""
        offset_config = OffsetConfig.from_config(config)
        partitions = OffsetsPartitions(broker_id, offset_config.num_partitions, replicas, metadata)
        groups = GroupMetadataManager(partitions, clock)
        return cls(
            partitions,
            groups,
            OffsetMetadataManager(offset_config.retention_ms, partitions, groups),
            ClassicGroupCoordinator(GroupConfig.from_config(config), groups),
            ConsumerGroupCoordinator(
                ConsumerGroupConfig.from_config(config), groups, metadata, configs, clock
            ),
            ShareGroupCoordinator(
                ShareGroupConfig.from_config(config), groups, metadata, configs, clock, share_member_removed
            ),
            configs,
        )

    def partition_of(self, group_id: str) -> int:
        """The group's ``__consumer_offsets`` partition: its leader coordinates the group."""
        return self._partitions.partition_of(group_id)

    def _owned(self, group_id: str) -> None:
        """Raise unless this broker currently coordinates ``group_id``."""
        if not group_id:
            raise InvalidGroupIdError("the group id must not be empty")
        self._partitions.require_loaded(group_id)

    # -- the offsets partitions led here ----------------------------------------------------
    def on_metadata_change(self) -> None:
        """Load the offsets partitions this broker now leads, unload those it lost: the
        members waiting in an unloaded classic group go and look for its new coordinator."""
        stale, fresh = self._partitions.leadership_changes()
        for partition in stale:
            for group in self._groups.unload(partition):
                if isinstance(group, ClassicGroup):
                    group.unload()
            self._offsets.unload(partition)
        for partition, replica in fresh.items():
            self._load(partition, replica)
        self._offsets.remove_offsets_of_deleted_topics()

    def _load(self, partition: int, replica: HostedReplica) -> None:
        """Replay the partition: offsets, then the groups as their records left them."""
        commits = 0
        classic: dict[str, GroupMetadata | None] = {}
        consumer: list[ConsumerGroupRecord] = []
        for batch in self._partitions.read(replica):
            self._offsets.replay(partition, batch)
            commits += len(batch.commits)
            classic.update(batch.groups)
            consumer += batch.consumer_groups
        self._consumer.load(partition, consumer)
        self._groups.load_classic_groups(classic)
        self._partitions.loaded[partition] = replica.leader_epoch
        log.info(
            "loaded %d offset commit record(s) and %d group(s) from %s-%d",
            commits,
            sum(m is not None for m in classic.values()),
            self._partitions.topic,
            partition,
        )

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker landed on an offsets partition led here (TxnMarkerAppender)."""
        self._offsets.on_txn_marker(partition, producer_id, commit)

    def remove_expired_offsets(self) -> None:
        self._offsets.remove_expired_offsets()

    async def expire_sessions_on_time(self, max_wait_s: float) -> None:
        """Remove the members of every kind of group whose sessions time out, when they do."""
        await asyncio.gather(
            self._classic.expire_sessions_on_time(max_wait_s),
            self._consumer.expire_sessions_on_time(max_wait_s),
            self._share.expire_sessions_on_time(max_wait_s),
        )

    # -- the classic protocol ---------------------------------------------------------------
    async def join(self, group_id: str, candidate: Member, requires_known_member_id: bool) -> JoinResponse:
        """JoinGroup; a new dynamic member on JoinGroup v4+ is answered MEMBER_ID_REQUIRED
        with the member id to rejoin with (KIP-394)."""
        self._owned(group_id)
        group = self._groups.get_group(group_id)
        if group is not None and group.type != GroupType.CLASSIC:
            raise InconsistentGroupProtocolError(
                f"Group {group_id} is a {group.type.value} group, not a classic group."
            )
        return await self._classic.join(group_id, candidate, requires_known_member_id)

    async def sync(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation: int,
        assignments: dict[str, bytes],
    ) -> bytes:
        self._owned(group_id)
        return await self._classic.sync(group_id, member_id, group_instance_id, generation, assignments)

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation: int
    ) -> None:
        self._owned(group_id)
        self._classic.heartbeat(group_id, member_id, group_instance_id, generation)

    def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[KafkaError | None]:
        self._owned(group_id)
        return self._classic.leave(group_id, members)

    # -- consumer groups (KIP-848) ----------------------------------------------------------
    async def consumer_group_heartbeat(self, request: Heartbeat) -> HeartbeatResult:
        return await self._consumer.heartbeat(request)

    def consumer_group_describe(self, group_id: str) -> tuple[ConsumerGroup, str]:
        """ConsumerGroupDescribe: the group and its assignor; GROUP_ID_NOT_FOUND unless the
        id is a consumer group (a client then asks DescribeGroups)."""
        self._partitions.require_loaded(group_id)
        group = self._groups.get_group(group_id)
        if isinstance(group, ConsumerGroup):
            return group, self._consumer.assignor(group)
        if isinstance(group, ClassicGroup):
            raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
        raise GroupIdNotFoundError(f"Group {group_id} not found.")

    # -- share groups (KIP-932) -------------------------------------------------------------
    def share_group_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topics: list[str] | None,
        client_id: str,
        client_host: str,
    ) -> ShareHeartbeatResult:
        """ShareGroupHeartbeat; an id that is another kind of group here, or has committed
        offsets, is not a share group (GROUP_ID_NOT_FOUND)."""
        if member_epoch == JOIN_EPOCH and self._groups.get_group(group_id) is None:
            if self._offsets.has_offsets(group_id):
                raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
        return self._share.heartbeat(
            group_id, member_id, member_epoch, rack_id, subscribed_topics, client_id, client_host
        )

    def share_group_describe(self, group_id: str) -> ShareGroup | None:
        """The share group, when this broker coordinates the id (NOT_COORDINATOR otherwise)."""
        return self._share.describe(group_id)

    # -- committed offsets ------------------------------------------------------------------
    async def commit(
        self, group_id: str, generation: int, member_id: str, group_instance_id: str | None, offsets: Offsets
    ) -> None:
        """OffsetCommit: stored once the group's protocol allows the committer to commit."""
        self._owned(group_id)
        group = self._groups.get_group(group_id)
        if isinstance(group, ConsumerGroup):
            group.validate_offset_commit(member_id, generation)
        elif isinstance(group, ShareGroup):
            raise GroupIdNotFoundError(f"Group {group_id} is a share group: it commits no offsets.")
        else:
            self._classic.validate_offset_commit(group_id, generation, member_id, group_instance_id)
        await self._offsets.commit(group_id, offsets)

    async def commit_transactional(
        self, group_id: str, producer_id: int, producer_epoch: int, offsets: Offsets
    ) -> None:
        """TxnOffsetCommit: the offsets join the producer's transaction."""
        self._owned(group_id)
        await self._offsets.commit_transactional(group_id, producer_id, producer_epoch, offsets)

    def committed(
        self,
        group_id: str,
        partitions: list[TopicPartition] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> dict[TopicPartition, CommittedOffset | None]:
        """OffsetFetch: the committed offsets of ``partitions`` (None: of every partition);
        a consumer group's member asking (v9+) must have its current epoch."""
        self._owned(group_id)
        group = self._groups.get_group(group_id)
        if isinstance(group, ConsumerGroup):
            group.validate_offset_fetch(member_id, member_epoch)
        return self._offsets.committed(group_id, partitions)

    def unstable(self, group_id: str) -> set[TopicPartition]:
        """OffsetFetch with require_stable: the partitions an open transaction commits."""
        return self._offsets.unstable(group_id)

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, Exception]:
        """OffsetDelete, by Kafka's rule: an empty group loses the offsets asked for; a
        consumer group with members keeps those of topics it subscribes to (each answered
        GROUP_SUBSCRIBED_TO_TOPIC) and loses the rest; another kind of group with members
        refuses (NON_EMPTY_GROUP). Returns the partitions refused, with their errors."""
        self._owned(group_id)
        group = self._groups.get_group(group_id)
        if group is None and group_id not in self._offsets.offsets:
            raise GroupIdNotFoundError(f"group {group_id} does not exist")
        refused: dict[TopicPartition, Exception] = {}
        if group is not None and group.has_members():
            if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise NonEmptyGroupError(f"group {group_id} has active members")
            refused = {
                tp: GroupSubscribedToTopicError(f"group {group_id} subscribes to {tp[0]}")
                for tp in partitions
                if group.is_subscribed_to(tp[0])
            }
        await self._offsets.delete(group_id, [tp for tp in partitions if tp not in refused])
        return refused

    # -- administration ---------------------------------------------------------------------
    def list_groups(self) -> list[ListedGroup]:
        """Every group coordinated here, and every group id with offsets but no group (an
        Empty classic group, as Kafka lists it)."""
        names = {g for g, offsets in self._offsets.offsets.items() if offsets} | set(self._groups.groups)
        rows = []
        for name in sorted(names):
            group = self._groups.get_group(name)
            if group is None:
                rows.append((name, "", GroupState.EMPTY.value, GroupType.CLASSIC.value))
            elif group.type != GroupType.SHARE or self._coordinates(name):
                rows.append((name, group.protocol_type or "", group.state_name(), group.type.value))
        return rows

    def _coordinates(self, group_id: str) -> bool:
        """Whether this broker coordinates the group now (a share group outlives the loss
        of its partition here until its members' sessions end)."""
        try:
            self._partitions.require_loaded(group_id)
        except KafkaError:
            return False
        return True

    def describe(self, group_id: str) -> ClassicGroup | ShareGroup:
        """DescribeGroups: a classic or share group; a group id with only offsets is an
        Empty classic group, without them Dead. A KIP-848 group is not described here
        (ConsumerGroupDescribe does): DescribeGroups before v6 answers it as Dead, as Kafka
        does for any group that is not classic."""
        self._owned(group_id)
        group = self._groups.get_group(group_id)
        if isinstance(group, ShareGroup):
            return self._share.describe(group_id) or group
        if isinstance(group, ClassicGroup):
            return group
        state = GroupState.EMPTY if group is None and self._offsets.has_offsets(group_id) else GroupState.DEAD
        return ClassicGroup(group_id, state=state)

    async def delete_group(self, group_id: str) -> None:
        """DeleteGroups: only a group without members goes, offsets and all. A share group
        is not deleted here: its share partitions' state would outlive it."""
        self._owned(group_id)
        group = self._groups.get_group(group_id)
        if isinstance(group, ConsumerGroup):
            await self._consumer.delete(group_id)
        elif isinstance(group, ShareGroup):
            raise GroupIdNotFoundError(f"Group {group_id} is a share group, not deleted here.")
        elif group is None and not self._offsets.has_offsets(group_id):
            raise GroupIdNotFoundError(f"group {group_id} does not exist")
        elif group is not None and group.has_members():
            raise NonEmptyGroupError(f"group {group_id} has active members")
        await self._offsets.delete_group(group_id)
