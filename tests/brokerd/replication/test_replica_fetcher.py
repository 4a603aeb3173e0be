"""Replica fetchers in-process, against a fake of the BrokerClientFactory port and followers
that record what is done to them: one fetcher per leader, fetches sent with this broker's
replica id, a divergent tail truncated where the leader's epoch ended, the throttle read
live, and fetchers moved when a partition's leader changes."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kafka.protocol.api_key import ApiKey

from brokerd.replication.fetcher import PARTITION_MAX_BYTES, REQUEST_TIMEOUT_S, THROTTLE_SLICE_S
from brokerd.replication.fetcher_manager import ReplicaFetcherManager

pytestmark = pytest.mark.unit

BROKER_ID = 2


class FollowerLog:
    def __init__(self, end_offset: int, latest_epoch: int | None) -> None:
        self.log_start_offset = 0
        self.log_end_offset = end_offset
        self.latest_epoch = latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return epoch, self.log_end_offset


class Follower:
    """A partition this broker follows; appends and truncations are recorded."""

    def __init__(
        self, topic: str, leader_id: int, end_offset: int = 0, latest_epoch: int | None = None
    ) -> None:
        self.topic, self.index = topic, 0
        self.leader_id, self.leader_epoch, self.is_leader = leader_id, 5, False
        self.high_watermark = 0
        self.log = FollowerLog(end_offset, latest_epoch)
        self.copied = asyncio.Event()
        self.truncated_to: int | None = None

    def truncate_to(self, offset: int) -> None:
        self.truncated_to = self.log.log_end_offset = offset

    def append_as_follower(self, records: bytes, high_watermark: int, log_start_offset: int) -> None:
        self.log.log_end_offset += len(records)
        self.high_watermark = high_watermark
        self.copied.set()


class Leader:
    """A leader's broker as the fake client reaches it: it ends every epoch at offset 4 and
    answers every fetch with three bytes of records."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.requests: list[tuple[int, dict]] = []

    async def request(
        self, api_key: int, api_version: int, fields: dict, extra_timeout_s: float = 0.0
    ) -> SimpleNamespace:
        self.requests.append((api_key, fields))
        await asyncio.sleep(0)
        topics = [(t["topic"], t["partitions"]) for t in fields["topics"]]
        if api_key == ApiKey.OffsetForLeaderEpoch:
            return SimpleNamespace(
                topics=[
                    SimpleNamespace(
                        topic=topic,
                        partitions=[
                            SimpleNamespace(
                                partition=p["partition"],
                                error_code=0,
                                leader_epoch=p["leader_epoch"],
                                end_offset=4,
                            )
                            for p in ps
                        ],
                    )
                    for topic, ps in topics
                ]
            )
        return SimpleNamespace(
            error_code=0,
            session_id=0,
            responses=[
                SimpleNamespace(
                    topic=topic,
                    partitions=[
                        SimpleNamespace(
                            partition_index=p["partition"],
                            error_code=0,
                            records=b"abc",
                            high_watermark=9,
                            log_start_offset=0,
                        )
                        for p in ps
                    ],
                )
                for topic, ps in topics
            ],
        )

    def close(self) -> None:
        pass


class Clients:
    """The BrokerClientFactory port: a Leader per broker id, and who asked for what."""

    def __init__(self) -> None:
        self.leaders: dict[int, Leader] = {}
        self.opened: list[tuple[int, str, float]] = []

    def __call__(self, broker_id: int, client_id: str, timeout_s: float) -> Leader:
        self.opened.append((broker_id, client_id, timeout_s))
        return self.leaders.setdefault(broker_id, Leader(broker_id))

    def fetches(self, broker_id: int) -> list[dict]:
        return [f for key, f in self.leaders[broker_id].requests if key == ApiKey.Fetch]


def test_one_fetcher_per_leader_copies_with_this_brokers_replica_id():
    async def scenario():
        clients = Clients()
        manager = ReplicaFetcherManager(BROKER_ID, clients)
        a, b = Follower("a", leader_id=1), Follower("b", leader_id=3)
        manager.update({("a", 0): a, ("b", 0): b}, {("a", 0), ("b", 0)})
        await asyncio.wait_for(asyncio.gather(a.copied.wait(), b.copied.wait()), 5)
        await manager.stop()
        assert sorted(clients.opened) == [
            (1, "replica-2", REQUEST_TIMEOUT_S),
            (3, "replica-2", REQUEST_TIMEOUT_S),
        ]
        fetch = clients.fetches(1)[0]
        assert fetch["replica_id"] == BROKER_ID
        assert fetch["topics"] == [
            {
                "topic": "a",
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": 5,
                        "fetch_offset": 0,
                        "log_start_offset": 0,
                        "partition_max_bytes": PARTITION_MAX_BYTES,
                    }
                ],
            }
        ]
        offsets = [f["topics"][0]["partitions"][0]["fetch_offset"] for f in clients.fetches(1)]
        assert offsets == list(range(0, 3 * len(offsets), 3))  # each from where the last ended
        assert a.high_watermark == 9

    asyncio.run(scenario())


def test_a_new_leader_epoch_first_truncates_where_the_leader_ended_it():
    async def scenario():
        clients = Clients()
        manager = ReplicaFetcherManager(BROKER_ID, clients)
        follower = Follower("a", leader_id=1, end_offset=6, latest_epoch=4)
        manager.update({("a", 0): follower}, {("a", 0)})
        await asyncio.wait_for(follower.copied.wait(), 5)
        await manager.stop()
        first_key, asked = clients.leaders[1].requests[0]
        assert first_key == ApiKey.OffsetForLeaderEpoch and asked["replica_id"] == BROKER_ID
        assert follower.truncated_to == 4
        assert clients.fetches(1)[0]["topics"][0]["partitions"][0]["fetch_offset"] == 4

    asyncio.run(scenario())


def test_the_throttle_is_read_at_every_fetch():
    async def scenario():
        clients = Clients()
        manager = ReplicaFetcherManager(BROKER_ID, clients)
        manager.throttle_bytes_per_s = 400
        follower = Follower("a", leader_id=1)
        manager.update({("a", 0): follower}, set())
        await asyncio.wait_for(follower.copied.wait(), 5)
        await manager.stop()
        assert clients.fetches(1)[0]["max_bytes"] == int(400 * THROTTLE_SLICE_S)

    asyncio.run(scenario())


def test_a_partition_whose_leader_moved_is_fetched_from_the_new_one():
    async def scenario():
        clients = Clients()
        manager = ReplicaFetcherManager(BROKER_ID, clients)
        follower = Follower("a", leader_id=1)
        manager.update({("a", 0): follower}, {("a", 0)})
        await asyncio.wait_for(follower.copied.wait(), 5)
        follower.leader_id, follower.copied = 3, asyncio.Event()
        manager.update({("a", 0): follower}, {("a", 0)})
        await asyncio.wait_for(follower.copied.wait(), 5)
        assert manager.fetchers[1].partitions == {}
        assert manager.fetchers[3].partitions == {("a", 0): follower}
        await manager.stop()
        assert manager.fetchers == {}

    asyncio.run(scenario())
