"""Leaders' ISR changes on their way to the state directory (Kafka's AlterPartitionManager).

A leader decides an ISR change on one turn of the event loop and it is written on a later
one, batched with the others decided meanwhile. In between, a metadata refresh may depose
the leader or move its epochs (a broker resumed after a pause does both in one turn), so
each proposal carries the epochs it was decided at and is written only while they still
hold; it is never re-stamped with newer ones, which would let a zombie leader write an ISR
for a partition another broker now leads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from brokerd.partition import Partition
from brokerd.ports import IsrWriter, TopicPartition
from brokerd.state import IsrProposal

log = logging.getLogger(__name__)


class AlterPartitionManager:
    """Queues the ISR changes this broker's leaders propose and writes them as one batch as
    soon as the event loop is free; ``live_brokers`` are the broker ids with a live lease,
    ``refresh_metadata`` brings the written changes (or the truth) back to the partitions."""

    def __init__(
        self,
        writer: IsrWriter,
        live_brokers: Callable[[], set[int]],
        refresh_metadata: Callable[[], None],
    ) -> None:
        self._writer = writer
        self._live_brokers = live_brokers
        self._refresh_metadata = refresh_metadata
        self._queued: dict[TopicPartition, tuple[Partition, IsrProposal]] = {}
        self.stale_proposals = 0  # dropped because the leader was deposed or its epochs moved

    def submit(self, partition: Partition, proposal: IsrProposal) -> None:
        """Queue ``partition``'s proposal (the Partition's AlterIsr)."""
        self._queued[partition.key] = (partition, proposal)
        if len(self._queued) == 1:
            asyncio.get_running_loop().call_soon(self.write)

    def write(self) -> None:
        """Write the queued proposals that are still current; every other one is refused
        back to its partition, which may propose again."""
        queued, self._queued = self._queued, {}
        proposals = {key: queued[key] for key in queued if self._admissible(*queued[key])}
        if not proposals:
            return
        before = {key: list(partition.isr) for key, (partition, _) in proposals.items()}
        try:
            results = self._writer.alter_isrs({key: proposal for key, (_, proposal) in proposals.items()})
        except Exception as exc:
            log.warning("could not write ISR changes for %s: %s", sorted(proposals), exc)
            results = dict.fromkeys(proposals)
        for key, record in results.items():
            partition, proposal = proposals[key]
            if record is None:
                partition.proposal_refused(proposal)
            else:
                log.info("%s-%d: ISR %s -> %s", *key, before[key], record.isr)
        self._refresh_metadata()

    def _admissible(self, partition: Partition, proposal: IsrProposal) -> bool:
        """Whether ``proposal`` may go to the state directory; refuses it back otherwise."""
        if not partition.proposal_is_current(proposal):
            self.stale_proposals += 1
            log.info(
                "%s: dropped the ISR change to %s decided at leader epoch %d, partition epoch %d: "
                "now leader %d at leader epoch %d, partition epoch %d (%d stale so far)",
                partition,
                proposal.isr,
                proposal.leader_epoch,
                proposal.partition_epoch,
                partition.leader_id,
                partition.leader_epoch,
                partition.partition_epoch,
                self.stale_proposals,
            )
            partition.proposal_refused(proposal)
            return False
        live = self._live_brokers()
        if any(r not in live and r not in partition.isr for r in proposal.isr):
            # KIP-841: a broker that is not live (a fetch it sent before dying was just
            # answered) never joins an ISR; the controller would only take it out again
            partition.proposal_refused(proposal)
            return False
        return True
