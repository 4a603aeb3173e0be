"""Keeps one ReplicaFetcher per leader this broker follows partitions from."""

from __future__ import annotations

from brokerd.partition import Partition
from brokerd.replication.fetcher import ReplicaFetcher


class ReplicaFetcherManager:
    def __init__(self, broker):
        self.broker = broker
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.stopped = False
        self.throttle_bytes_per_s: int | None = None  # `kctl broker throttle`: slow following

    def update(self, partitions: dict[tuple[str, int], Partition], fresh: set) -> None:
        """Point every followed partition at the fetcher of its current leader."""
        if self.stopped:
            return
        by_leader: dict[int, dict] = {}
        for key, partition in partitions.items():
            if not partition.is_leader and partition.leader_id >= 0:
                by_leader.setdefault(partition.leader_id, {})[key] = partition
        for leader_id, fetcher in self.fetchers.items():
            if leader_id not in by_leader:
                fetcher.assign({}, set())
        for leader_id, followed in by_leader.items():
            fetcher = self.fetchers.get(leader_id)
            if fetcher is None:
                fetcher = self.fetchers[leader_id] = ReplicaFetcher(self.broker, leader_id)
                fetcher.start()
            fetcher.assign(followed, fresh & followed.keys())

    async def stop(self) -> None:
        """Stop following for good: the broker is shutting down."""
        self.stopped = True
        for fetcher in self.fetchers.values():
            await fetcher.stop()
        self.fetchers.clear()
