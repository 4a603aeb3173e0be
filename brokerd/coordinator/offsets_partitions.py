"""The ``__consumer_offsets`` partitions as the group coordinator uses them (the part of
Kafka's CoordinatorRuntime it needs): which of them this broker leads and has loaded, at
which leader epoch, which partition a group id hashes to, appending records there, and
reading a partition back when it is loaded.

A write counts once the in-sync replicas have it, so what the coordinator stores survives a
restart of every broker and the loss of the coordinator's own. A failed write is reported as
Kafka's coordinator reports it, in the errors a group's clients know what to do with.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kafka.errors import (
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC, OffsetsBatch, read_offsets_batches
from brokerd.coordinator.records import InternalTopicCoordinator, build_batch, read_whole_log
from brokerd.ports import HostedReplica, HostedReplicas, MetadataView
from brokerd.storage.partition_log import AppendInfo

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


class OffsetsPartitions(InternalTopicCoordinator):
    """The offsets partitions this broker leads; ``loaded`` maps each one loaded to the
    leader epoch it was loaded at."""

    topic = OFFSETS_TOPIC

    def __init__(
        self, broker_id: int, num_partitions: int, replicas: HostedReplicas, metadata: MetadataView
    ) -> None:
        super().__init__(broker_id, num_partitions, metadata)
        self.replicas = replicas
        self.loaded: dict[int, int] = {}

    def leadership_changes(self) -> tuple[list[int], dict[int, HostedReplica]]:
        """The partitions to unload (no longer led here, or led at another leader epoch than
        they were loaded at: led elsewhere in between, where the leader wrote to them) and
        those to load, each with its replica."""
        leading = {
            p: replica
            for (t, p), replica in self.replicas.partitions.items()
            if t == OFFSETS_TOPIC and replica.is_leader
        }
        stale = [p for p, at in self.loaded.items() if p not in leading or leading[p].leader_epoch != at]
        for partition in stale:
            del self.loaded[partition]
        return sorted(stale), {p: leading[p] for p in sorted(leading.keys() - self.loaded.keys())}

    def read(self, replica: HostedReplica) -> Iterator[OffsetsBatch]:
        """Every batch of a partition, in log order."""
        for chunk in read_whole_log(replica.log):
            yield from read_offsets_batches(chunk)

    async def append(self, group_id: str, records: Sequence[Record]) -> None:
        """Append to the group's offsets partition and wait for the in-sync replicas."""
        if not records:
            return
        try:
            partition, info = self.append_batch(group_id, build_batch(records))
            await partition.wait_for_ack(info.last_offset, COMMIT_TIMEOUT_S)
        except _UNAVAILABLE as exc:
            raise CoordinatorNotAvailableError(str(exc)) from exc
        except NotLeaderForPartitionError as exc:
            raise NotCoordinatorError(str(exc)) from exc

    def append_batch(self, group_id: str, batch: bytes) -> tuple[HostedReplica, AppendInfo]:
        """Append a batch as the leader, without waiting for the replicas."""
        try:
            partition = self.replicas.get_leader(OFFSETS_TOPIC, self.partition_of(group_id))
        except Exception as exc:
            raise NotCoordinatorError(str(exc)) from exc
        return partition, partition.append_as_leader(batch, acks=-1)
