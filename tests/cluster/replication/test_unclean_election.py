"""Unclean leader election on real brokers, after Kafka's SimpleNetworkPartitionTest: the
follower is cut off (paused) until it leaves the ISR, the leader takes acks=1 writes only it
has, then dies. Without unclean election the partition waits offline for its in-sync replica
and loses nothing; with it (a cluster-wide broker default here) the out-of-sync follower leads
at once and the acknowledged tail is gone, also from the old leader when it returns."""

from __future__ import annotations

import signal

import pytest

from tests.cluster_harness import wait_until
from tests.kafka_helpers import (
    consume_all,
    create_topic,
    partition_record,
    produce_sync,
    raw_set_broker_config,
)

pytestmark = pytest.mark.cluster

FAST_FAILOVER = {"broker.session.timeout.ms": "1500", "auto.leader.rebalance.enable": "false"}
KEPT = [b"kept%d" % i for i in range(10)]
LOST = [b"lost%d" % i for i in range(5)]


def offline_with_an_unreplicated_tail(cluster, topic: str) -> tuple[int, int]:
    """Run the scenario up to the leader's death; returns (dead leader, live follower)."""
    create_topic(cluster, topic, 1, 2, {"min.insync.replicas": "1"}, wait_for_leaders=True)
    record = partition_record(cluster, topic)
    leader, follower = record.leader, next(r for r in record.replicas if r != record.leader)
    assert all(err is None for err, _, _ in produce_sync(cluster.bootstrap, topic, KEPT, acks="all"))
    cluster.signal(follower, signal.SIGSTOP)
    wait_until(
        lambda: partition_record(cluster, topic).isr == [leader], 15, "the paused follower to leave the ISR"
    )
    assert [err for err, _, _ in produce_sync(cluster.bootstrap, topic, LOST, acks="1")] == [None] * 5
    cluster.kill(leader)
    cluster.signal(follower, signal.SIGCONT)
    wait_until(lambda: partition_record(cluster, topic).leader == -1, 15, "the partition to go offline")
    return leader, follower


def values(cluster, topic: str, expected: int) -> list[bytes]:
    return [value for *_, value in consume_all(cluster.bootstrap, topic, 1, expected)]


def test_without_unclean_election_the_partition_waits_for_its_in_sync_replica(cluster_factory):
    cluster = cluster_factory(3, FAST_FAILOVER)
    leader, follower = offline_with_an_unreplicated_tail(cluster, "clean")
    assert partition_record(cluster, "clean").isr == [leader]
    cluster.start(leader)
    wait_until(
        lambda: partition_record(cluster, "clean").leader == leader, 15, "the in-sync replica to lead again"
    )
    assert values(cluster, "clean", 15) == KEPT + LOST
    assert partition_record(cluster, "clean").last_unclean_election is None


def test_a_cluster_wide_unclean_default_elects_the_out_of_sync_follower(cluster_factory):
    cluster = cluster_factory(3, FAST_FAILOVER)
    leader, follower = offline_with_an_unreplicated_tail(cluster, "unclean")
    live = next(b for b in cluster.ports if b != leader)
    assert (
        raw_set_broker_config(cluster.ports[live], "", "unclean.leader.election.enable", "true").error_code
        == 0
    )
    wait_until(
        lambda: partition_record(cluster, "unclean").leader == follower,
        15,
        "the out-of-sync follower to be elected",
    )
    elected = partition_record(cluster, "unclean")
    assert elected.isr == [follower]
    assert elected.last_unclean_election == {"leader_epoch": elected.leader_epoch, "isr": [leader]}
    assert values(cluster, "unclean", 10) == KEPT  # acknowledged with acks=1, and lost

    cluster.start(leader)  # the old leader truncates the tail nobody else has
    wait_until(
        lambda: leader in partition_record(cluster, "unclean").isr,
        20,
        "the old leader to truncate and rejoin the ISR",
    )
    assert "truncating divergent log from 15 to 10" in cluster.log_tail(leader, 300)
    assert values(cluster, "unclean", 10) == KEPT
