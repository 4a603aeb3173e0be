"""Kafka's GroupMetadataManager: every group this coordinator holds, classic, consumer
(KIP-848) and share (KIP-932), in one map, and what is stored of them in
``__consumer_offsets``.

Each completed generation of a classic group (members, leader, assignment) is appended to
the group's offsets partition, and so is every change of a consumer group (records.py of
consumer_group); a broker that loads the partition gets both back. A share group is kept in
memory only: its members join again at a new coordinator, and their records' state lives
with the share partitions. Which protocol a request speaks is decided by the group its id
holds here: one id is one group, of one type.

How each protocol runs its groups is the business of classic_group_coordinator.py,
consumer_group/ and share_group/; the committed offsets are the OffsetMetadataManager's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from kafka.errors import GroupIdNotFoundError, KafkaError, NotCoordinatorError

from brokerd.coordinator.classic_group import ClassicGroup, GroupState
from brokerd.coordinator.consumer_group.model import ConsumerGroup
from brokerd.coordinator.group_types import Group, GroupType
from brokerd.coordinator.offsets_partitions import OffsetsPartitions, Record
from brokerd.coordinator.offsets_topic import GroupMetadata, group_metadata_key, group_metadata_value
from brokerd.coordinator.records import build_batch
from brokerd.coordinator.share_group.share_group import ShareGroup

log = logging.getLogger(__name__)

G = TypeVar("G", ClassicGroup, ConsumerGroup, ShareGroup)


class GroupMetadataManager:
    """The groups of the offsets partitions this broker has loaded (and the share groups
    coordinated here). Member sessions of every group run on ``clock`` (monotonic)."""

    def __init__(self, partitions: OffsetsPartitions, clock: Callable[[], float] = time.monotonic) -> None:
        self.partitions = partitions
        self.clock = clock
        self.groups: dict[str, Group] = {}

    def partition_of(self, group_id: str) -> int:
        return self.partitions.partition_of(group_id)

    def require_loaded(self, group_id: str) -> int:
        """The group's partition; NOT_COORDINATOR unless this broker coordinates the group."""
        return self.partitions.require_loaded(group_id)

    # -- the map ----------------------------------------------------------------------------
    def get_group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def group_of(self, group_id: str, kind: type[G]) -> G | None:
        """The group, if ``group_id`` holds one of this kind."""
        group = self.groups.get(group_id)
        return group if isinstance(group, kind) else None

    def groups_of(self, kind: type[G]) -> list[G]:
        return [g for g in self.groups.values() if isinstance(g, kind)]

    def add_group(self, group: G) -> G:
        """A new group; GROUP_ID_NOT_FOUND when the id holds a group of another type."""
        held = self.groups.get(group.group_id)
        if held is not None and held is not group:
            raise GroupIdNotFoundError(f"Group {group.group_id} is not a {group.type.value} group.")
        self.groups[group.group_id] = group
        return group

    def restore_group(self, group: Group) -> None:
        """A group read back from its offsets partition: the log has the last word on the id."""
        self.groups[group.group_id] = group

    def remove_group(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if isinstance(group, ClassicGroup):
            group.transition_to(GroupState.DEAD)

    # -- loading and unloading with the offsets partitions ----------------------------------
    def load_classic_groups(self, stored: Mapping[str, GroupMetadata | None]) -> None:
        """Each classic group as its last metadata record left it, its members' sessions
        starting now; a consumer group loaded under the id is kept (the classic group was
        converted after that record)."""
        now = self.clock()
        for group_id, metadata in stored.items():
            if metadata is not None and group_id not in self.groups:
                self.groups[group_id] = ClassicGroup.restore(group_id, metadata, now)

    def unload(self, partition: int) -> list[Group]:
        """Forget the classic and consumer groups of a partition no longer led here; returns
        them. Share groups stay until their members' sessions run out: fencing a member is
        what releases the records it holds in the share partitions led here."""
        unloaded = [
            g
            for g in self.groups.values()
            if g.type != GroupType.SHARE and self.partition_of(g.group_id) == partition
        ]
        for group in unloaded:
            del self.groups[group.group_id]
        return unloaded

    # -- what a classic group stores --------------------------------------------------------
    async def store_group(self, group: ClassicGroup, assignments: dict[str, bytes] | None = None) -> None:
        """Append the group's current generation (with ``assignments``, the leader's, when
        they are stored before they take effect); return once it is replicated."""
        self._require_current(group)
        await self.partitions.append(group.group_id, [_group_record(group, assignments)])

    def store_group_without_waiting(self, group: ClassicGroup) -> None:
        """Append the group's current generation and return at once, as Kafka stores an
        empty generation: if that write is lost, a new coordinator sees the previous
        generation, whose members then time out."""
        try:
            self._require_current(group)
            self.partitions.append_batch(group.group_id, build_batch([_group_record(group)]))
        except KafkaError as exc:
            log.warning("group %s: could not store its generation: %s", group.group_id, exc)

    def _require_current(self, group: ClassicGroup) -> None:
        """Only the group this coordinator holds now is stored: one unloaded since (Dead, or
        replaced by the group loaded again) must not write its old generation after the
        current one's records. NOT_COORDINATOR, as Kafka answers for a Dead group."""
        if group.state == GroupState.DEAD or self.groups.get(group.group_id) is not group:
            raise NotCoordinatorError(f"group {group.group_id} is no longer coordinated here")

    # -- what a consumer group stores and asks ----------------------------------------------
    async def append_records(self, group_id: str, records: Sequence[Record]) -> None:
        """Append a consumer group's records and wait for the in-sync replicas."""
        await self.partitions.append(group_id, records)

    def classic_group_size(self, group_id: str) -> int | None:
        group = self.group_of(group_id, ClassicGroup)
        return None if group is None else len(group.members)

    def drop_classic_group(self, group_id: str) -> Record:
        """An empty classic group becomes a consumer group (Kafka's online upgrade): the
        classic group is forgotten (its offsets stay) and its metadata record tombstoned."""
        if self.group_of(group_id, ClassicGroup) is not None:
            self.remove_group(group_id)
        return group_metadata_tombstone(group_id)


def group_metadata_tombstone(group_id: str) -> Record:
    """Deletes a classic group's metadata record."""
    return group_metadata_key(group_id), None


def _group_record(group: ClassicGroup, assignments: dict[str, bytes] | None = None) -> Record:
    return group_metadata_key(group.group_id), group_metadata_value(group.metadata(assignments))
