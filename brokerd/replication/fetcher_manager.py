"""Keeps one ReplicaFetcher per leader this broker follows partitions from."""

from __future__ import annotations

from brokerd.partition import Partition
from brokerd.ports import BrokerClientFactory, TopicPartition
from brokerd.replication.fetcher import ReplicaFetcher


class ReplicaFetcherManager:
    """Kafka's ReplicaFetcherManager, for the broker ``broker_id``: its fetchers reach the
    leaders through connections ``clients`` opens."""

    def __init__(self, broker_id: int, clients: BrokerClientFactory) -> None:
        self.broker_id = broker_id
        self.clients = clients
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.stopped = False
        self.throttle_bytes_per_s: int | None = None  # `kctl broker throttle`: slow following

    def update(self, partitions: dict[TopicPartition, Partition], fresh: set[TopicPartition]) -> None:
        """Point every followed partition at the fetcher of its current leader."""
        if self.stopped:
            return
        by_leader: dict[int, dict[TopicPartition, Partition]] = {}
        for key, partition in partitions.items():
            if not partition.is_leader and partition.leader_id >= 0:
                by_leader.setdefault(partition.leader_id, {})[key] = partition
        for leader_id, unneeded in self.fetchers.items():
            if leader_id not in by_leader:
                unneeded.assign({}, set())
        for leader_id, followed in by_leader.items():
            fetcher = self.fetchers.get(leader_id)
            if fetcher is None:
                fetcher = self.fetchers[leader_id] = ReplicaFetcher(
                    self.broker_id, leader_id, self.clients, lambda: self.throttle_bytes_per_s
                )
                fetcher.start()
            fetcher.assign(followed, fresh & followed.keys())

    async def stop(self) -> None:
        """Stop following for good: the broker is shutting down."""
        self.stopped = True
        for fetcher in self.fetchers.values():
            await fetcher.stop()
        self.fetchers.clear()
