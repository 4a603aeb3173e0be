"""Kafka's GroupMetadataManager: the groups and committed offsets kept in ``__consumer_offsets``.

Commits are appended to the group's partition and answered once the in-sync replicas have
them, so they survive a restart of every broker and the loss of the coordinator's broker. So
does each completed generation of a group (members, leader, assignment). A broker that
becomes leader of an offsets partition rebuilds the offsets and groups of that partition by
reading it; one that loses the partition forgets them. Offsets committed in a transaction
(TxnOffsetCommit) stay pending until the producer's marker reaches the partition. Offsets
that outlive their use are removed every offsets.retention.check.interval.ms (KIP-211).

Who may commit, and the membership of the groups, is the GroupCoordinator's business; this
module only keeps what it is told to, in memory and in the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka.errors import (
    CoordinatorNotAvailableError,
    KafkaError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

from brokerd.config import BrokerConfig
from brokerd.coordinator.consumer_group.records import ConsumerGroupRecord
from brokerd.coordinator.group import Group, GroupState
from brokerd.coordinator.offset_retention import expired_offsets
from brokerd.coordinator.offsets_topic import (
    OFFSETS_TOPIC,
    CommittedOffset,
    GroupMetadata,
    OffsetsBatch,
    group_metadata_key,
    group_metadata_value,
    offset_key,
    offset_value,
    read_offsets_batches,
)
from brokerd.coordinator.records import InternalTopicCoordinator, build_batch, read_whole_log
from brokerd.ports import HostedReplica, HostedReplicas, MetadataView, ReplicaLog, TopicPartition
from brokerd.storage.partition_log import AppendInfo

log = logging.getLogger(__name__)

COMMIT_TIMEOUT_S = 5.0

Record = tuple[bytes, bytes | None]  # key, value (None: a tombstone)

# Kafka's appendGroupMetadataErrorToResponseError: why a write to the offsets partition
# failed, as the group's clients understand it (find the coordinator again, or retry).
_UNAVAILABLE = (
    UnknownTopicOrPartitionError,
    NotEnoughReplicasError,
    NotEnoughReplicasAfterAppendError,
    RequestTimedOutError,
)


class ModernGroups(Protocol):
    """The KIP-848 consumer groups kept in the same partitions (consumer_group/coordinator.py):
    given their records when a partition is loaded, told when it is unloaded."""

    def load(self, partition: int, found: Iterable[ConsumerGroupRecord]) -> None: ...

    def unload(self, partition_of: Callable[[str], int], partition: int) -> None: ...

    def keeps_offsets_of(self, group_id: str) -> Callable[[str], bool] | None:
        """For a consumer group with members: whether it keeps a topic's offsets (it
        subscribes to the topic); None when no such group has members."""


@dataclass(frozen=True)
class OffsetConfig:
    """Kafka's OffsetConfig, read once at start: neither setting is dynamic."""

    num_partitions: int  # offsets.topic.num.partitions
    retention_ms: int  # offsets.retention.minutes

    @classmethod
    def from_config(cls, config: BrokerConfig) -> OffsetConfig:
        return cls(
            config.get("offsets.topic.num.partitions"), config.get("offsets.retention.minutes") * 60_000
        )


class GroupMetadataManager(InternalTopicCoordinator):
    """The groups and offsets of the ``__consumer_offsets`` partitions this broker leads.

    ``groups`` holds every group loaded or created here (the GroupCoordinator runs their
    membership); ``offsets`` the committed offsets of each group id, with or without a group.
    """

    topic = OFFSETS_TOPIC

    def __init__(
        self,
        broker_id: int,
        config: OffsetConfig,
        replicas: HostedReplicas,
        metadata: MetadataView,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(broker_id, config.num_partitions, metadata)
        self.retention_ms = config.retention_ms
        self.replicas = replicas
        self.clock = clock  # monotonic, for member sessions: the GroupCoordinator's too
        self.loaded: dict[int, int] = {}  # offsets partition -> the leader epoch it was loaded at
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # group -> producer id -> offsets committed in that producer's open transaction (None:
        # a tombstone replayed from a transactional batch, which deletes the offset on commit)
        self.pending_txn_offsets: dict[str, dict[int, dict[TopicPartition, CommittedOffset | None]]] = {}
        # (offsets partition, producer id) -> (epoch, next sequence) of its transactional batches
        self._txn_sequences: dict[tuple[int, int], tuple[int, int]] = {}
        self.modern_groups: ModernGroups | None = None  # set by whoever runs them

    def get_group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def add_group(self, group: Group) -> Group:
        self.groups[group.group_id] = group
        return group

    # -- ownership: loading and unloading offsets partitions --------------------------------
    def on_metadata_change(self) -> list[Group]:
        """Load the partitions this broker now leads, unload those it lost; returns the
        groups unloaded, whose waiting members must look for their new coordinator. A
        partition led at another leader epoch than it was loaded at (it was led elsewhere in
        between, and the leader there wrote to it) is unloaded and loaded again."""
        leading = {
            p: replica
            for (t, p), replica in self.replicas.partitions.items()
            if t == OFFSETS_TOPIC and replica.is_leader
        }
        stale = [p for p, at in self.loaded.items() if p not in leading or leading[p].leader_epoch != at]
        unloaded = [group for partition in sorted(stale) for group in self._unload(partition)]
        for partition in sorted(leading.keys() - self.loaded.keys()):
            self._load(partition, leading[partition].leader_epoch, leading[partition].log)
        self._remove_offsets_of_deleted_topics()
        return unloaded

    def _load(self, partition: int, leader_epoch: int, log_: ReplicaLog) -> None:
        """Replay the partition: plain commits count at once, transactional ones stay pending
        until their producer's marker follows (commit applies them, abort drops them). Each
        group comes back as its last metadata record left it, its members' sessions
        starting now."""
        count = 0
        stored: dict[str, GroupMetadata | None] = {}
        consumer_groups: list[ConsumerGroupRecord] = []
        for chunk in read_whole_log(log_):
            for batch in read_offsets_batches(chunk):
                self._replay(partition, batch)
                stored.update(batch.groups)
                consumer_groups += batch.consumer_groups
                count += len(batch.commits)
        if self.modern_groups is not None:
            self.modern_groups.load(partition, consumer_groups)
        now = self.clock()
        for group_id, metadata in stored.items():
            if metadata is not None:
                self.groups[group_id] = Group.restore(group_id, metadata, now)
        self.loaded[partition] = leader_epoch
        log.info(
            "loaded %d offset commit record(s) and %d group(s) from %s-%d",
            count,
            sum(m is not None for m in stored.values()),
            OFFSETS_TOPIC,
            partition,
        )

    def _replay(self, partition: int, batch: OffsetsBatch) -> None:
        key = (partition, batch.producer_id)
        if batch.marker is not None:
            if self._txn_sequences.get(key, (None,))[0] != batch.producer_epoch:
                self._txn_sequences[key] = (batch.producer_epoch, 0)  # a fencing marker
            self.on_txn_marker(partition, batch.producer_id, batch.marker)
        elif batch.transactional:
            self._txn_sequences[key] = (batch.producer_epoch, batch.next_sequence)
            for group, topic, part, committed in batch.commits:
                self._pending(group, batch.producer_id)[(topic, part)] = committed
        else:
            for group, topic, part, committed in batch.commits:
                self._cache(group, (topic, part), committed)

    def _unload(self, partition: int) -> list[Group]:
        self.loaded.pop(partition, None)
        if self.modern_groups is not None:
            self.modern_groups.unload(self.partition_of, partition)
        unloaded = []
        known = set(self.groups) | set(self.offsets) | set(self.pending_txn_offsets)
        for group_id in [g for g in known if self.partition_of(g) == partition]:
            group = self.groups.pop(group_id, None)
            if group is not None:
                unloaded.append(group)
            self.offsets.pop(group_id, None)
            self.pending_txn_offsets.pop(group_id, None)
        self._txn_sequences = {k: v for k, v in self._txn_sequences.items() if k[0] != partition}
        return unloaded

    def _cache(self, group_id: str, tp: TopicPartition, committed: CommittedOffset | None) -> None:
        if committed is None:
            self.offsets.get(group_id, {}).pop(tp, None)
        else:
            self.offsets.setdefault(group_id, {})[tp] = committed

    # -- committed offsets ------------------------------------------------------------------
    async def store_offsets(self, group_id: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        """Append a commit to the group's offsets partition; return once it is replicated."""
        await self._append(
            group_id, [(offset_key(group_id, t, p), offset_value(c)) for (t, p), c in offsets.items()]
        )
        for tp, committed in offsets.items():
            self._cache(group_id, tp, committed)

    async def store_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: dict[TopicPartition, CommittedOffset],
    ) -> None:
        """The offsets join the producer's transaction: appended as a transactional batch
        (numbered as an idempotent producer numbers its batches), they stay pending until
        the transaction's marker reaches this offsets partition (``on_txn_marker``)."""
        index = self.partition_of(group_id)
        epoch, sequence = self._txn_sequences.get((index, producer_id), (producer_epoch, 0))
        if epoch != producer_epoch:
            sequence = 0  # a new epoch numbers its batches from 0 again
        records = [(offset_key(group_id, t, p), offset_value(c)) for (t, p), c in offsets.items()]
        partition, info = self._append_batch(
            group_id, build_batch(records, producer_id, producer_epoch, sequence)
        )
        self._txn_sequences[(index, producer_id)] = (producer_epoch, sequence + len(records))
        self._pending(group_id, producer_id).update(offsets)
        await partition.wait_for_ack(info.last_offset, COMMIT_TIMEOUT_S)

    def committed(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset | None]:
        """The group's committed offsets of ``partitions`` (None: of every partition)."""
        known = self.offsets.get(group_id, {})
        if partitions is None:
            return dict(known)
        return {tp: known.get(tp) for tp in partitions}

    def unstable(self, group_id: str) -> set[TopicPartition]:
        """Partitions whose offsets an open transaction of ``group_id`` is committing (KIP-447:
        an OffsetFetch that requires stable offsets waits until their markers are written)."""
        return {tp for offsets in self.pending_txn_offsets.get(group_id, {}).values() for tp in offsets}

    def _pending(self, group_id: str, producer_id: int) -> dict[TopicPartition, CommittedOffset | None]:
        return self.pending_txn_offsets.setdefault(group_id, {}).setdefault(producer_id, {})

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker landed on an offsets partition led here: the producer's pending
        offsets of every group of that partition become committed, or are dropped."""
        for group_id in [g for g in self.pending_txn_offsets if self.partition_of(g) == partition]:
            offsets = self.pending_txn_offsets[group_id].pop(producer_id, {})
            if not self.pending_txn_offsets[group_id]:
                del self.pending_txn_offsets[group_id]
            for tp, committed in offsets.items() if commit else ():
                self._cache(group_id, tp, committed)

    # -- group metadata ---------------------------------------------------------------------
    async def store_group(self, group: Group, assignments: dict[str, bytes] | None = None) -> None:
        """Append the group's current generation (with ``assignments``, the leader's, when
        they are stored before they take effect); return once it is replicated."""
        self._require_current(group)
        await self._append(group.group_id, [_group_record(group, assignments)])

    def store_group_without_waiting(self, group: Group) -> None:
        """Append the group's current generation and return at once, as Kafka stores an
        empty generation: if that write is lost, a new coordinator sees the previous
        generation, whose members then time out."""
        try:
            self._require_current(group)
            self._append_batch(group.group_id, build_batch([_group_record(group)]))
        except KafkaError as exc:
            log.warning("group %s: could not store its generation: %s", group.group_id, exc)

    def _require_current(self, group: Group) -> None:
        """Only the group this coordinator holds now is stored: one unloaded since (Dead, or
        replaced by the group loaded again) must not write its old generation after the
        current one's records. NOT_COORDINATOR, as Kafka answers for a Dead group."""
        if group.state == GroupState.DEAD or self.groups.get(group.group_id) is not group:
            raise NotCoordinatorError(f"group {group.group_id} is no longer coordinated here")

    async def delete_group(self, group_id: str) -> None:
        """DeleteGroups: tombstones for the group's offsets and its metadata, so neither comes
        back when the partition is loaded again (and compaction drops them)."""
        offsets = list(self.offsets.get(group_id, {}))
        await self._append(
            group_id,
            [(offset_key(group_id, t, p), None) for t, p in offsets] + [(group_metadata_key(group_id), None)],
        )
        self.groups.pop(group_id, None)
        self.offsets.pop(group_id, None)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        """OffsetDelete: tombstones for the group's offsets of ``partitions``."""
        await self._append(group_id, [(offset_key(group_id, t, p), None) for t, p in partitions])
        for tp in partitions:
            self._cache(group_id, tp, None)

    # -- what the KIP-848 consumer group coordinator writes and asks ------------------------
    async def append_records(self, group_id: str, records: Sequence[Record]) -> None:
        """Append a consumer group's records and wait for the in-sync replicas."""
        await self._append(group_id, records)

    def classic_group_size(self, group_id: str) -> int | None:
        group = self.groups.get(group_id)
        return None if group is None else len(group.members)

    def drop_classic_group(self, group_id: str) -> Record:
        """An empty classic group becomes a consumer group (Kafka's online upgrade): the
        classic group is forgotten (its offsets stay) and its metadata record tombstoned."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            group.transition_to(GroupState.DEAD)
        return group_metadata_key(group_id), None

    # -- appending to the offsets partition -------------------------------------------------
    async def _append(self, group_id: str, records: Sequence[Record]) -> None:
        """Append to the group's offsets partition and wait for the in-sync replicas; a
        failure is reported as Kafka's coordinator reports it."""
        if not records:
            return
        try:
            partition, info = self._append_batch(group_id, build_batch(records))
            await partition.wait_for_ack(info.last_offset, COMMIT_TIMEOUT_S)
        except _UNAVAILABLE as exc:
            raise CoordinatorNotAvailableError(str(exc)) from exc
        except NotLeaderForPartitionError as exc:
            raise NotCoordinatorError(str(exc)) from exc

    def _append_batch(self, group_id: str, batch: bytes) -> tuple[HostedReplica, AppendInfo]:
        try:
            partition = self.replicas.get_leader(OFFSETS_TOPIC, self.partition_of(group_id))
        except Exception as exc:
            raise NotCoordinatorError(str(exc)) from exc
        return partition, partition.append_as_leader(batch, acks=-1)

    # -- offset retention -------------------------------------------------------------------
    def remove_expired_offsets(self) -> None:
        """Kafka's cleanupGroupMetadata, every offsets.retention.check.interval.ms: expired
        offsets get tombstones, and an empty group left without offsets is removed."""
        now_ms = int(time.time() * 1000)
        for group_id in sorted(set(self.offsets) | set(self.groups)):
            keeps = self.modern_groups.keeps_offsets_of(group_id) if self.modern_groups is not None else None
            if keeps is not None:  # a live consumer group: only unsubscribed topics' offsets age
                expired = sorted(
                    tp
                    for tp, c in self.offsets.get(group_id, {}).items()
                    if not keeps(tp[0])
                    and tp not in self.unstable(group_id)
                    and now_ms - c.commit_timestamp >= self.retention_ms
                )
                self._remove_offsets(group_id, expired, "expired (offsets.retention.minutes)")
                continue
            expired = expired_offsets(
                self.groups.get(group_id),
                self.offsets.get(group_id, {}),
                self.unstable(group_id),
                now_ms,
                self.retention_ms,
            )
            self._remove_offsets(group_id, expired, "expired (offsets.retention.minutes)")

    def _remove_offsets_of_deleted_topics(self) -> None:
        """A deleted topic's offsets go with it, as in Kafka: a topic created again under
        the name starts without them."""
        for group_id, offsets in list(self.offsets.items()):
            gone = sorted(tp for tp in offsets if not self.metadata.has_topic(tp[0]))
            if gone:
                self._remove_offsets(group_id, gone, "of deleted topics")

    def _remove_offsets(self, group_id: str, partitions: list[TopicPartition], why: str) -> None:
        """Tombstones for ``partitions`` of ``group_id``, and for the group itself if it is
        empty and keeps no offset; written without waiting, retried at the next pass."""
        group = self.groups.get(group_id)
        left = set(self.offsets.get(group_id, {})) - set(partitions)
        drop_group = group is not None and group.state == GroupState.EMPTY and not left
        records: list[Record] = [(offset_key(group_id, t, p), None) for t, p in partitions]
        records += [(group_metadata_key(group_id), None)] if drop_group else []
        if not records:
            return
        try:
            self._append_batch(group_id, build_batch(records))
        except KafkaError as exc:
            log.info("group %s: removing offsets failed, retrying later: %s", group_id, exc)
            return
        for tp in partitions:
            self._cache(group_id, tp, None)
        if partitions:
            log.info("group %s: %d offset(s) %s removed", group_id, len(partitions), why)
        if group is not None and drop_group:
            group.transition_to(GroupState.DEAD)
            del self.groups[group_id]
            log.info("group %s: empty and without offsets, removed", group_id)


def _group_record(group: Group, assignments: dict[str, bytes] | None = None) -> Record:
    return group_metadata_key(group.group_id), group_metadata_value(group.metadata(assignments))
