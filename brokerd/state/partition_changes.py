"""Leader and ISR changes: compare-and-sets on a partition's epochs in the metadata log.

The controller's leader and ISR decisions (change_partitions) are made on a view that a
leader's ISR change may overtake, and a leader's ISR change (alter_isrs, Kafka's
AlterPartition) on a view that a controller decision may overtake; each is therefore written
only while the partition is still as its writer saw it, else dropped. Every accepted change
raises the partition epoch, so the loser of a race always notices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from brokerd.metadata import records as metadata_records
from brokerd.metadata.editor import partition_change
from brokerd.metadata.image import TopicImage
from brokerd.metadata.registration import PartitionRegistration
from brokerd.state.metadata_store import MetadataStore

# per partition: the partition epoch a decision was made at, and the registration decided
Decisions = dict[tuple[str, int], tuple[int, PartitionRegistration]]


class IsrProposal(NamedTuple):
    """A leader's ISR change (Kafka's AlterPartition), with the leader epoch and partition
    epoch the leader had when it decided it: it is applied only while both still hold."""

    leader_epoch: int
    partition_epoch: int
    isr: list[int]


IsrProposals = dict[tuple[str, int], IsrProposal]


def _current(topics: Mapping[str, TopicImage], key: tuple[str, int]) -> PartitionRegistration | None:
    topic = topics.get(key[0])
    return None if topic is None else topic.partitions.get(key[1])


class PartitionChanges(MetadataStore):
    def change_partitions(self, controller_epoch: int, changes: Decisions) -> list[tuple[str, int]]:
        """A controller round's leader and ISR decisions, each a compare-and-set: a partition
        is changed only while its partition epoch is still the one the decision was made at
        (else a leader's ISR change came first, and the next round decides again). Returns the
        partitions changed. O(changes), whatever the size of the cluster."""
        with self._writing(controller_epoch) as log:
            new_records: list[metadata_records.MetadataRecord] = []
            done = []
            for key, (expected_epoch, decided) in changes.items():
                current = _current(log.image.topics, key)
                if current is not None and current.partition_epoch == expected_epoch:
                    change = partition_change(key[0], current, decided)
                    if change is not None:
                        new_records.append(change)
                        done.append(key)
            log.append(new_records, controller_epoch)
        return done

    def alter_isrs(self, proposals: IsrProposals) -> dict[tuple[str, int], PartitionRegistration | None]:
        """Leaders' ISR changes, each a compare-and-set on its partition's leader epoch and
        partition epoch (Kafka's AlterPartition), written together: one lock and one fsync
        for a round's worth of changes. Per partition its new registration, or None when the
        leader's view is stale (a new leader epoch, or a controller change in between) or the
        ISR leaves out the current leader (a leader never takes itself out of its ISR)."""
        with self._writing(None) as log:
            new_records: list[metadata_records.PartitionChangeRecord] = []
            for key, (leader_epoch, partition_epoch, isr) in proposals.items():
                current = _current(log.image.topics, key)
                if (
                    current is not None
                    and current.leader_epoch == leader_epoch
                    and current.partition_epoch == partition_epoch
                    and current.leader in isr
                ):
                    new_records.append(
                        metadata_records.PartitionChangeRecord(
                            *key, isr=sorted(isr), partition_epoch=partition_epoch + 1
                        )
                    )
            log.append(new_records, None)
            accepted = {(change.topic, change.partition) for change in new_records}
            return {key: _current(log.image.topics, key) if key in accepted else None for key in proposals}

    def alter_isr(
        self, topic: str, partition: int, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> PartitionRegistration | None:
        """One leader's ISR change (see alter_isrs)."""
        key = (topic, partition)
        return self.alter_isrs({key: IsrProposal(leader_epoch, partition_epoch, isr)})[key]
