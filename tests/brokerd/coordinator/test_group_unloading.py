"""A classic group's coordinator loses its offsets partition and gets it back, in-process
against fakes of the broker's ports: the unloaded group is Dead, its rebalance timer never
fires into the group loaded again, and a partition led again at a newer leader epoch is
loaded again, with what the leader in between wrote."""

from __future__ import annotations

import asyncio

import pytest
from kafka.errors import NotCoordinatorError

from brokerd.coordinator.classic_group import GroupState
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC, CommittedOffset
from tests.brokerd.coordinator.fakes import BROKER_ID
from tests.brokerd.coordinator.test_group_rebalance import GROUP, Cluster, candidate, join, stable_group

pytestmark = pytest.mark.unit

TP = ("orders", 0)


def offsets_replica(cluster: Cluster):
    return cluster.replicas.partitions[(OFFSETS_TOPIC, cluster.manager.partition_of(GROUP))]


def test_an_unloaded_groups_rebalance_timer_never_touches_the_group_loaded_again():
    """A rebalance is under way (one member rejoined, the other has not) when the broker loses
    the offsets partition (paused past its session); it gets the partition back before the
    rebalance timeout. The old timer must not drop the members and store an Empty group of
    the old generation after the live records."""

    async def scenario() -> None:
        cluster = Cluster()
        first, second = candidate(rebalance_timeout_ms=50), candidate(rebalance_timeout_ms=50)
        await stable_group(cluster.coordinator, first, second)
        rejoining = asyncio.create_task(join(cluster.coordinator, first))
        await asyncio.sleep(0)
        unloaded = cluster.group()
        timer = unloaded.rebalance_task
        replica = offsets_replica(cluster)

        replica.is_leader = False
        cluster.coordinator.on_metadata_change()
        with pytest.raises(NotCoordinatorError):
            await rejoining
        assert unloaded.state == GroupState.DEAD

        replica.is_leader, replica.leader_epoch = True, replica.leader_epoch + 1
        cluster.coordinator.on_metadata_change()
        end_after_reload = replica.log.log_end_offset
        await asyncio.gather(timer, return_exceptions=True)  # however it ends
        assert replica.log.log_end_offset == end_after_reload  # nothing stored by the old group
        group = cluster.group()
        assert (group.state, group.generation) == (GroupState.STABLE, 1)
        assert set(group.members) == {first.member_id, second.member_id}

    asyncio.run(scenario())


def test_an_offsets_partition_led_again_at_a_newer_leader_epoch_is_loaded_again():
    """Leadership went to another broker and came back within one metadata refresh: what the
    other coordinator committed meanwhile is read, not the offsets kept from before."""

    async def scenario() -> None:
        here = Cluster()
        here.metadata.leaders[TP] = BROKER_ID  # the topic exists: its offsets are kept
        await here.coordinator.commit(GROUP, -1, "", None, {TP: CommittedOffset(5)})
        elsewhere = Cluster(here.replicas)  # the leader in between, on the same log
        elsewhere.metadata.leaders[TP] = BROKER_ID
        await elsewhere.coordinator.commit(GROUP, -1, "", None, {TP: CommittedOffset(7)})
        offsets_replica(here).leader_epoch += 2
        here.coordinator.on_metadata_change()
        assert here.coordinator.committed(GROUP, [TP])[TP].offset == 7

    asyncio.run(scenario())
