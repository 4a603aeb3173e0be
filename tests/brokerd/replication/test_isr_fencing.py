"""A leader's ISR changes are fenced by the epochs they were decided at: real partitions and
a real state directory, in-process. A proposal queued by a leader that a metadata update then
deposes is dropped, never written under the new leader's epochs; the state directory refuses
an ISR without its leader; a failed write lets the leader propose again; a pending expansion
keeps holding the high watermark back across a metadata re-apply of the same epochs."""

from __future__ import annotations

import asyncio
import time

import pytest

from brokerd.partition import Partition
from brokerd.replication.alter_partition import AlterPartitionManager
from brokerd.state import ClusterState, IsrProposal, PartitionRegistration, TopicImage
from brokerd.storage.log_config import LogConfig
from brokerd.storage.partition_log import PartitionLog
from tests.brokerd.storage.conftest import make_batch

pytestmark = pytest.mark.unit

KEY = ("payments", 0)
LAG_MS = 30_000


@pytest.fixture
def state(tmp_path) -> ClusterState:
    """A cluster whose payments/0 is led by broker 2 at leader epoch 1, ISR [2, 3]."""
    cluster = ClusterState(tmp_path / "cluster")
    cluster.initialize({1: 9001, 2: 9002, 3: 9003})
    epoch = cluster.claim_controller(3, lambda b: False)
    with cluster.update_topics(epoch) as topics:
        record = PartitionRegistration(0, [2, 3], leader=2, leader_epoch=1, isr=[2, 3])
        topics["payments"] = TopicImage("payments", "id", {}, {0: record})
    return cluster


def current(state: ClusterState) -> PartitionRegistration:
    return state.topics()["payments"].partitions[0]


def hosted(tmp_path, broker_id: int, alter_isr) -> Partition:
    log = PartitionLog.open(tmp_path / f"broker-{broker_id}" / "payments-0", LogConfig.from_configs({}))
    return Partition(broker_id, *KEY, log, alter_isr)


def lose_follower(partition: Partition, follower: int) -> None:
    """The follower has not caught up for longer than replica.lag.time.max.ms (the leader's
    clock jumped past it, as it does on SIGCONT)."""
    partition.followers[follower].last_caught_up_ms = int(time.time() * 1000) - 2 * LAG_MS
    partition.maybe_shrink_isr(LAG_MS)


def test_a_proposal_queued_before_the_leader_is_deposed_is_dropped_not_restamped(tmp_path, state):
    """The README's failover: broker 2 resumes believing it leads at leader epoch 1, shrinks
    the ISR to itself, and in the same turn of the event loop learns that the controller
    moved the partition to broker 3 at leader epoch 2. The proposal must not be written."""
    refreshes = []
    manager = AlterPartitionManager(state, lambda: {2, 3}, lambda: refreshes.append(True))
    zombie = hosted(tmp_path, 2, manager.submit)
    zombie.update(current(state))

    async def resume() -> None:
        lose_follower(zombie, 3)  # queued; written once the loop is free
        epoch = state.claim_controller(3, lambda b: False)
        moved = PartitionRegistration(0, [2, 3], leader=3, leader_epoch=2, isr=[3], partition_epoch=1)
        state.change_partitions(epoch, {KEY: (0, moved)})
        zombie.update(current(state))  # the metadata refresh of the same turn
        await asyncio.sleep(0)

    asyncio.run(resume())
    after = current(state)
    assert (after.leader, after.leader_epoch, after.isr) == (3, 2, [3])
    assert manager.stale_proposals == 1


def test_the_state_directory_refuses_an_isr_without_the_current_leader(state):
    """Even at the right epochs, an ISR that leaves out the leader is never written: the
    controller would elect from an ISR the real leader is not in."""
    assert state.alter_isr(*KEY, leader_epoch=1, partition_epoch=0, isr=[3]) is None
    assert current(state).isr == [2, 3]
    assert state.alter_isr(*KEY, leader_epoch=1, partition_epoch=0, isr=[2]).isr == [2]


class LockedStateDirectory:
    """The IsrWriter port while another process (a paused broker) holds the state lock."""

    def __init__(self) -> None:
        self.attempts: list[dict[tuple[str, int], IsrProposal]] = []

    def alter_isrs(self, proposals):
        self.attempts.append(dict(proposals))
        raise TimeoutError("state directory is locked by another process")


def test_a_failed_write_lets_the_leader_propose_again(tmp_path, state):
    """A write that raises leaves no proposal pending forever: the next lag check proposes
    the shrink again."""
    writer = LockedStateDirectory()
    manager = AlterPartitionManager(writer, lambda: {2, 3}, lambda: None)
    leader = hosted(tmp_path, 2, manager.submit)
    leader.update(current(state))

    async def two_lag_checks() -> None:
        lose_follower(leader, 3)
        await asyncio.sleep(0)
        lose_follower(leader, 3)
        await asyncio.sleep(0)

    asyncio.run(two_lag_checks())
    assert [list(attempt.values()) for attempt in writer.attempts] == [[IsrProposal(1, 0, [2])]] * 2


def test_a_pending_expansion_holds_the_high_watermark_across_a_same_epoch_reapply(tmp_path):
    """A follower that caught up is proposed into the ISR; until the metadata names it, the
    high watermark waits for it too, even when a topic config change re-applies the same
    partition record meanwhile."""
    proposals: list[IsrProposal] = []
    leader = hosted(tmp_path, 1, lambda partition, proposal: proposals.append(proposal))
    record = PartitionRegistration(0, [1, 2], leader=1, leader_epoch=1, isr=[1])
    leader.update(record)
    leader.record_follower_fetch(2, 0)
    assert proposals == [IsrProposal(1, 0, [1, 2])]

    leader.update(record)  # a config-only re-apply: the same epochs
    leader.append_as_leader(make_batch(3), acks=1)
    assert leader.high_watermark == 0  # follower 2, joining, has none of the three yet
    leader.record_follower_fetch(2, 3)
    assert leader.high_watermark == 3
    assert len(proposals) == 1  # still one proposal pending, not a second one
