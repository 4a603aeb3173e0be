"""Kafka's OffsetMetadataManager: the committed offsets of the groups whose
``__consumer_offsets`` partitions this broker leads.

Commits are appended to the group's partition and answered once the in-sync replicas have
them. A broker that loads a partition replays them; one that loses it forgets them. Offsets
committed in a transaction (TxnOffsetCommit) stay pending until the producer's marker
reaches the partition. Offsets that outlive their use are removed every
offsets.retention.check.interval.ms (KIP-211), and a deleted topic's go with it.

Whether a commit is allowed is decided before it gets here, by the group's protocol; what
this keeps of a group's membership is only what retention asks of the GroupMetadataManager.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kafka.errors import KafkaError

from brokerd.config import BrokerConfig
from brokerd.coordinator.classic_group import ClassicGroup, GroupState
from brokerd.coordinator.consumer_group.model import ConsumerGroup
from brokerd.coordinator.group_metadata_manager import GroupMetadataManager, group_metadata_tombstone
from brokerd.coordinator.offset_retention import expired_offsets
from brokerd.coordinator.offsets_partitions import COMMIT_TIMEOUT_S, OffsetsPartitions, Record
from brokerd.coordinator.offsets_topic import CommittedOffset, OffsetsBatch, offset_key, offset_value
from brokerd.coordinator.records import build_batch
from brokerd.ports import TopicPartition

log = logging.getLogger(__name__)

Offsets = dict[TopicPartition, CommittedOffset]


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


class OffsetMetadataManager:
    """``offsets`` holds the committed offsets of each group id, with or without a group."""

    def __init__(
        self, retention_ms: int, partitions: OffsetsPartitions, groups: GroupMetadataManager
    ) -> None:
        self.retention_ms = retention_ms
        self.partitions = partitions
        self.groups = groups
        self.offsets: dict[str, Offsets] = {}
        # group -> producer id -> offsets committed in that producer's open transaction (None:
        # a tombstone replayed from a transactional batch, which deletes the offset on commit)
        self.pending_txn_offsets: dict[str, dict[int, dict[TopicPartition, CommittedOffset | None]]] = {}
        # (offsets partition, producer id) -> (epoch, next sequence) of its transactional batches
        self._txn_sequences: dict[tuple[int, int], tuple[int, int]] = {}

    # -- loading and unloading with the offsets partitions ----------------------------------
    def replay(self, partition: int, batch: OffsetsBatch) -> None:
        """Plain commits count at once, transactional ones stay pending until their
        producer's marker follows (commit applies them, abort drops them)."""
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

    def unload(self, partition: int) -> None:
        for group_id in [g for g in {*self.offsets, *self.pending_txn_offsets} if self._in(g, partition)]:
            self.offsets.pop(group_id, None)
            self.pending_txn_offsets.pop(group_id, None)
        self._txn_sequences = {k: v for k, v in self._txn_sequences.items() if k[0] != partition}

    def _in(self, group_id: str, partition: int) -> bool:
        return self.partitions.partition_of(group_id) == partition

    def _cache(self, group_id: str, tp: TopicPartition, committed: CommittedOffset | None) -> None:
        if committed is None:
            self.offsets.get(group_id, {}).pop(tp, None)
        else:
            self.offsets.setdefault(group_id, {})[tp] = committed

    # -- commits and fetches ----------------------------------------------------------------
    async def commit(self, group_id: str, offsets: Offsets) -> None:
        """Append a commit to the group's offsets partition; return once it is replicated."""
        await self.partitions.append(
            group_id, [(offset_key(group_id, t, p), offset_value(c)) for (t, p), c in offsets.items()]
        )
        for tp, committed in offsets.items():
            self._cache(group_id, tp, committed)

    async def commit_transactional(
        self, group_id: str, producer_id: int, producer_epoch: int, offsets: Offsets
    ) -> None:
        """The offsets join the producer's transaction: appended as a transactional batch
        (numbered as an idempotent producer numbers its batches), they stay pending until
        the transaction's marker reaches this offsets partition (``on_txn_marker``)."""
        index = self.partitions.partition_of(group_id)
        epoch, sequence = self._txn_sequences.get((index, producer_id), (producer_epoch, 0))
        if epoch != producer_epoch:
            sequence = 0  # a new epoch numbers its batches from 0 again
        records = [(offset_key(group_id, t, p), offset_value(c)) for (t, p), c in offsets.items()]
        partition, info = self.partitions.append_batch(
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

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.offsets.get(group_id))

    def unstable(self, group_id: str) -> set[TopicPartition]:
        """Partitions whose offsets an open transaction of ``group_id`` is committing (KIP-447:
        an OffsetFetch that requires stable offsets waits until their markers are written)."""
        return {tp for offsets in self.pending_txn_offsets.get(group_id, {}).values() for tp in offsets}

    def _pending(self, group_id: str, producer_id: int) -> dict[TopicPartition, CommittedOffset | None]:
        return self.pending_txn_offsets.setdefault(group_id, {}).setdefault(producer_id, {})

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker landed on an offsets partition led here: the producer's pending
        offsets of every group of that partition become committed, or are dropped."""
        for group_id in [g for g in self.pending_txn_offsets if self._in(g, partition)]:
            offsets = self.pending_txn_offsets[group_id].pop(producer_id, {})
            if not self.pending_txn_offsets[group_id]:
                del self.pending_txn_offsets[group_id]
            for tp, committed in offsets.items() if commit else ():
                self._cache(group_id, tp, committed)

    # -- deletion ---------------------------------------------------------------------------
    async def delete_group(self, group_id: str) -> None:
        """DeleteGroups: tombstones for the group's offsets and its classic metadata, so
        neither comes back when the partition is loaded again (and compaction drops them)."""
        offsets = list(self.offsets.get(group_id, {}))
        await self.partitions.append(
            group_id,
            [(offset_key(group_id, t, p), None) for t, p in offsets] + [group_metadata_tombstone(group_id)],
        )
        self.groups.remove_group(group_id)
        self.offsets.pop(group_id, None)

    async def delete(self, group_id: str, partitions: list[TopicPartition]) -> None:
        """OffsetDelete: tombstones for the group's offsets of ``partitions``."""
        await self.partitions.append(group_id, [(offset_key(group_id, t, p), None) for t, p in partitions])
        for tp in partitions:
            self._cache(group_id, tp, None)

    # -- retention --------------------------------------------------------------------------
    def remove_expired_offsets(self) -> None:
        """Kafka's cleanupGroupMetadata, every offsets.retention.check.interval.ms: expired
        offsets get tombstones, and an empty classic group left without offsets is removed.
        A consumer group with members keeps the offsets of the topics it subscribes to."""
        now_ms = int(time.time() * 1000)
        classic = {g.group_id for g in self.groups.groups_of(ClassicGroup)}
        for group_id in sorted(set(self.offsets) | classic):
            group = self.groups.get_group(group_id)
            offsets, unstable = self.offsets.get(group_id, {}), self.unstable(group_id)
            if isinstance(group, ConsumerGroup) and group.members:
                expired = sorted(
                    tp
                    for tp, c in offsets.items()
                    if not group.is_subscribed_to(tp[0])
                    and tp not in unstable
                    and now_ms - c.commit_timestamp >= self.retention_ms
                )
            else:
                as_classic = group if isinstance(group, ClassicGroup) else None
                expired = expired_offsets(as_classic, offsets, unstable, now_ms, self.retention_ms)
            self._remove(group_id, expired, "expired (offsets.retention.minutes)")

    def remove_offsets_of_deleted_topics(self) -> None:
        """A deleted topic's offsets go with it, as in Kafka: a topic created again under
        the name starts without them."""
        for group_id, offsets in list(self.offsets.items()):
            gone = sorted(tp for tp in offsets if not self.partitions.metadata.has_topic(tp[0]))
            if gone:
                self._remove(group_id, gone, "of deleted topics")

    def _remove(self, group_id: str, partitions: list[TopicPartition], why: str) -> None:
        """Tombstones for ``partitions`` of ``group_id``, and for the group itself if it is
        an empty classic group and keeps no offset; written without waiting, retried at the
        next pass."""
        group = self.groups.group_of(group_id, ClassicGroup)
        left = set(self.offsets.get(group_id, {})) - set(partitions)
        drop_group = group is not None and group.state == GroupState.EMPTY and not left
        records: list[Record] = [(offset_key(group_id, t, p), None) for t, p in partitions]
        records += [group_metadata_tombstone(group_id)] if drop_group else []
        if not records:
            return
        try:
            self.partitions.append_batch(group_id, build_batch(records))
        except KafkaError as exc:
            log.info("group %s: removing offsets failed, retrying later: %s", group_id, exc)
            return
        for tp in partitions:
            self._cache(group_id, tp, None)
        if partitions:
            log.info("group %s: %d offset(s) %s removed", group_id, len(partitions), why)
        if drop_group:
            self.groups.remove_group(group_id)
            log.info("group %s: empty and without offsets, removed", group_id)
