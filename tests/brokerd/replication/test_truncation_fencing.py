"""A follower's truncation is fenced by the leader epoch it asked at: a real partition and a
real log, a replica fetcher in-process against a fake of the BrokerClientFactory port whose
OffsetForLeaderEpoch answer is held back while the partition's metadata changes. An answer
for an epoch the replica has left is not applied, and a leader never truncates its log."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kafka.errors import NotLeaderForPartitionError
from kafka.protocol.api_key import ApiKey

from brokerd.partition import Partition
from brokerd.replication.fetcher import ReplicaFetcher
from brokerd.state import PartitionRegistration
from brokerd.storage.log_config import LogConfig
from brokerd.storage.partition_log import PartitionLog
from tests.brokerd.storage.conftest import make_batch

pytestmark = pytest.mark.unit

KEY = ("payments", 0)
FOLLOWER, LEADER, OTHER = 2, 1, 3


class HeldLeader:
    """Broker 1 as the fetcher reaches it: the first OffsetForLeaderEpoch answer waits for
    ``release``; every answer ends the asked epoch at ``end_offsets[current_leader_epoch]``;
    Fetch requests are recorded and never answered. ``next_request`` is set by any request
    sent after the release, so the held answer has been handled by then."""

    def __init__(self, end_offsets: dict[int, int]) -> None:
        self.end_offsets = end_offsets
        self.release = asyncio.Event()
        self.asked = asyncio.Event()
        self.fetched = asyncio.Event()
        self.next_request = asyncio.Event()
        self.fetch_offsets: list[int] = []

    def __call__(self, broker_id: int, client_id: str, timeout_s: float) -> HeldLeader:
        return self

    async def request(self, api_key: int, api_version: int, fields: dict, extra_timeout_s: float = 0.0):
        asked = fields["topics"][0]["partitions"][0]
        if self.release.is_set():
            self.next_request.set()
        if api_key == ApiKey.Fetch:
            self.fetch_offsets.append(asked["fetch_offset"])
            self.fetched.set()
            await asyncio.Event().wait()
        self.asked.set()
        await self.release.wait()
        answer = SimpleNamespace(
            partition=0,
            error_code=0,
            leader_epoch=asked["leader_epoch"],
            end_offset=self.end_offsets[asked["current_leader_epoch"]],
        )
        return SimpleNamespace(topics=[SimpleNamespace(topic=KEY[0], partitions=[answer])])

    def close(self) -> None:
        pass


def replica_with_five_records_of_epoch_1(tmp_path) -> Partition:
    """Broker 2's replica: it led at leader epoch 1 and wrote offsets 0-4, then follows broker 1
    at leader epoch 2."""
    log = PartitionLog.open(tmp_path / "payments-0", LogConfig.from_configs({}))
    partition = Partition(FOLLOWER, *KEY, log, lambda partition, proposal: None)
    partition.update(PartitionRegistration(0, [1, 2, 3], leader=FOLLOWER, leader_epoch=1, isr=[1, 2, 3]))
    for _ in range(5):
        partition.append_as_leader(make_batch(1), acks=1)
    partition.update(PartitionRegistration(0, [1, 2, 3], leader=LEADER, leader_epoch=2, isr=[1, 2, 3]))
    return partition


async def truncate_while(partition: Partition, leader: HeldLeader, change) -> ReplicaFetcher:
    """Start following ``partition``, and apply ``change`` while its OffsetForLeaderEpoch is
    in flight; returns the running fetcher."""
    fetcher = ReplicaFetcher(FOLLOWER, LEADER, leader, lambda: None)
    fetcher.assign({KEY: partition}, {KEY})
    fetcher.start()
    await asyncio.wait_for(leader.asked.wait(), 5)
    change(fetcher)
    leader.release.set()
    return fetcher


def test_an_answer_for_an_epoch_left_during_the_request_does_not_cancel_the_newer_truncation(tmp_path):
    """Leadership moves 1 -> 3 -> 1 while the follower's question at leader epoch 2 is in
    flight; at leader epoch 4 the leader ended the follower's epoch at 3. The epoch-2 answer
    (nothing to truncate) must not stand for epoch 4: the follower truncates to 3 before it
    fetches."""
    partition = replica_with_five_records_of_epoch_1(tmp_path)
    leader = HeldLeader({2: 5, 4: 3})

    def leadership_moves_away_and_back(fetcher: ReplicaFetcher) -> None:
        partition.update(PartitionRegistration(0, [1, 2, 3], leader=LEADER, leader_epoch=4, isr=[1, 2, 3]))
        fetcher.assign({KEY: partition}, {KEY})

    async def scenario() -> None:
        fetcher = await truncate_while(partition, leader, leadership_moves_away_and_back)
        await asyncio.wait_for(leader.fetched.wait(), 5)
        await fetcher.stop()

    asyncio.run(scenario())
    assert leader.fetch_offsets[0] == 3
    assert partition.log.log_end_offset == 3


def test_a_replica_elected_leader_during_the_request_keeps_its_log(tmp_path):
    """The follower becomes the leader at leader epoch 3 while its question is in flight: the
    old leader's answer (truncate to 3) must not cut the new leader's log."""
    partition = replica_with_five_records_of_epoch_1(tmp_path)
    leader = HeldLeader({2: 3, 3: 3})

    def elected(fetcher: ReplicaFetcher) -> None:
        partition.update(PartitionRegistration(0, [1, 2, 3], leader=FOLLOWER, leader_epoch=3, isr=[2, 3]))

    async def scenario() -> None:
        fetcher = await truncate_while(partition, leader, elected)
        await asyncio.wait_for(leader.next_request.wait(), 5)
        await fetcher.stop()

    asyncio.run(scenario())
    assert partition.log.log_end_offset == 5
    assert partition.last_truncation is None


def test_a_leader_refuses_to_truncate(tmp_path):
    partition = replica_with_five_records_of_epoch_1(tmp_path)
    partition.update(PartitionRegistration(0, [1, 2, 3], leader=FOLLOWER, leader_epoch=3, isr=[2, 3]))
    with pytest.raises(NotLeaderForPartitionError):
        partition.truncate_to(3)
    assert partition.log.log_end_offset == 5
