"""Transaction markers: how a decided transaction reaches every partition it wrote to.

The coordinator appends markers to the partitions led by its own broker directly and sends
WriteTxnMarkers to the leaders of the others, then retries whatever failed (a leader moved,
a broker died, replicas were slow) against the current leaders until every partition has its
marker, as Kafka's TransactionMarkerChannelManager does. A marker counts once the partition's
in-sync replicas have it (acks=all).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka.errors import InvalidProducerEpochError, NotCoordinatorError
from kafka.protocol.api_key import ApiKey

from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.ports import BrokerClientFactory, HostedReplicas, MetadataView, TxnOffsetsListener
from brokerd.replication.broker_client import BrokerClient

log = logging.getLogger(__name__)

MARKER_ACK_TIMEOUT_S = 5.0
RETRY_BACKOFF_S = 0.1
WRITE_TXN_MARKERS_VERSION = 0
# A stale marker (its producer moved on to a newer epoch) means the transaction was
# completed already: nothing is left to do on that partition.
DONE_CODES = {0, InvalidProducerEpochError.errno}
DONE_ERRORS = (InvalidProducerEpochError,)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class TxnMarker:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


class TxnMarkerAppender:
    """The partition leader's side of WriteTxnMarkers, also used by a coordinator for the
    partitions its own broker leads."""

    def __init__(self, replicas: HostedReplicas, offsets: TxnOffsetsListener) -> None:
        self.replicas = replicas
        self.offsets = offsets

    async def append(
        self, marker: TxnMarker, partitions: list[TopicPartition], timeout_s: float
    ) -> dict[TopicPartition, Exception | None]:
        """Append ``marker`` to each partition led here and wait until it is replicated;
        returns each partition's error, if any."""
        errors: dict[TopicPartition, Exception | None] = {}

        async def one(tp: TopicPartition) -> None:
            try:
                partition = self.replicas.get_leader(*tp)
                info = partition.append_txn_marker(
                    marker.producer_id, marker.producer_epoch, marker.commit, marker.coordinator_epoch
                )
                await partition.wait_for_ack(info.last_offset, timeout_s)
            except Exception as exc:
                errors[tp] = exc
                return
            if tp[0] == OFFSETS_TOPIC:
                self.offsets.on_txn_marker(tp[1], marker.producer_id, marker.commit)
            errors[tp] = None

        await asyncio.gather(*(one(tp) for tp in partitions))
        return errors


class TransactionMarkerWriter:
    """Kafka's TransactionMarkerChannelManager: the markers of one coordinator's
    transactions, to whichever brokers lead the partitions."""

    def __init__(
        self, broker_id: int, metadata: MetadataView, clients: BrokerClientFactory, local: TxnMarkerAppender
    ) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.clients = clients
        self.local = local
        self._clients: dict[tuple[int, str, int], BrokerClient] = {}

    async def write(
        self, marker: TxnMarker, partitions: Iterable[TopicPartition], still_coordinator: Callable[[], bool]
    ) -> None:
        """Return once every partition of ``partitions`` that still exists has ``marker``;
        raise NotCoordinatorError as soon as ``still_coordinator()`` turns false."""
        remaining = set(partitions)
        while True:
            remaining = {tp for tp in remaining if self._exists(tp)}
            if not remaining:
                return
            if not still_coordinator():
                raise NotCoordinatorError("the transaction moved to another coordinator")
            by_leader = self._by_leader(remaining)
            failed = await asyncio.gather(
                *(self._send(leader, marker, tps) for leader, tps in by_leader.items())
            )
            remaining = {tp for tps in failed for tp in tps} | (
                remaining - {tp for tps in by_leader.values() for tp in tps}
            )
            if remaining:
                await asyncio.sleep(RETRY_BACKOFF_S)
                self.metadata.refresh()

    def _exists(self, tp: TopicPartition) -> bool:
        """A deleted topic needs no marker any more."""
        return self.metadata.partition_leader(*tp) is not None

    def _by_leader(self, partitions: set[TopicPartition]) -> dict[int, list[TopicPartition]]:
        live = self.metadata.live_broker_ids()
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in sorted(partitions):
            leader = self.metadata.partition_leader(*tp)
            if leader in live:
                by_leader.setdefault(leader, []).append(tp)
        return by_leader

    async def _send(
        self, leader: int, marker: TxnMarker, partitions: list[TopicPartition]
    ) -> list[TopicPartition]:
        """Write to one leader; returns the partitions that must be retried."""
        if leader != self.broker_id:
            codes = await self._send_remote(leader, marker, partitions)
            return [tp for tp in partitions if codes.get(tp) not in DONE_CODES]
        errors = await self.local.append(marker, partitions, MARKER_ACK_TIMEOUT_S)
        for tp, exc in errors.items():
            if exc is not None:
                log.info("marker for producer %d on %s-%d failed: %r", marker.producer_id, *tp, exc)
        return [tp for tp, exc in errors.items() if exc is not None and not isinstance(exc, DONE_ERRORS)]

    async def _send_remote(
        self, leader: int, marker: TxnMarker, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        address = self.metadata.broker_address(leader)
        if address is None:
            return {}
        key = (leader, *address)
        client = self._clients.get(key)
        if client is None:
            client = self.clients(leader, f"broker-{self.broker_id}-txn-markers", MARKER_ACK_TIMEOUT_S)
            if client is None:
                return {}
            self._clients[key] = client
        topics: dict[str, list[int]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(index)
        try:
            response = await client.request(
                ApiKey.WriteTxnMarkers,
                WRITE_TXN_MARKERS_VERSION,
                {
                    "markers": [
                        {
                            "producer_id": marker.producer_id,
                            "producer_epoch": marker.producer_epoch,
                            "transaction_result": marker.commit,
                            "coordinator_epoch": marker.coordinator_epoch,
                            "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                        }
                    ]
                },
                extra_timeout_s=MARKER_ACK_TIMEOUT_S,
            )
        except Exception as exc:
            log.info("WriteTxnMarkers to broker %d failed, will retry: %r", leader, exc)
            return {}
        return {
            (t.name, p.partition_index): p.error_code
            for result in response.markers
            for t in result.topics
            for p in t.partitions
        }

    def close(self) -> None:
        """Close the connections to other brokers (the broker is stopping)."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()
