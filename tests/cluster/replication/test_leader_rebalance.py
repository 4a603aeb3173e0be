"""auto.leader.rebalance.enable on 3 real brokers: a preferred replica that is back in sync
gets its leadership back on the controller's imbalance check
(leader.imbalance.check.interval.seconds), only when the share of its preferred partitions
led elsewhere is above leader.imbalance.per.broker.percentage; ElectLeaders does it at once."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster_harness import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

FAST = {"broker.session.timeout.ms": "1500", "replica.lag.time.max.ms": "3000"}
INTERVAL = "leader.imbalance.check.interval.seconds"
PERCENTAGE = "leader.imbalance.per.broker.percentage"
# Long enough for the preferred replica to die, come back and rejoin the ISR before the first
# check (one interval after the controller took office), so leadership is seen staying away.
FIRST_CHECK_S = 10


def partition(cluster):
    return cluster.state.topics()["back"].partitions[0]


def preferred_back_in_sync(cluster) -> int:
    """A partition whose preferred replica is not the controller, led elsewhere once that
    replica was killed, and that replica restarted and back in the ISR. Returns it."""
    controller, _ = wait_until(cluster.state.controller, 10, "a controller")
    preferred = next(b for b in cluster.ports if b != controller)
    replicas = [preferred] + [b for b in cluster.ports if b != preferred]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("back", 1, replica_assignment=[replicas])])["back"].result(10)
    wait_until(lambda: len(partition(cluster).isr) == 3, 15, "a fully replicated partition")
    cluster.kill(preferred)
    wait_until(
        lambda: partition(cluster).leader not in (preferred, -1),
        15,
        "leadership to move off the killed preferred replica",
    )
    cluster.start(preferred)
    wait_until(
        lambda: preferred in partition(cluster).isr, 20, "the restarted preferred replica to rejoin the ISR"
    )
    return preferred


def test_a_preferred_replica_back_in_sync_leads_again_on_the_imbalance_check(cluster_factory):
    started = time.monotonic()  # the controller took office after this: no check before + interval
    cluster = cluster_factory(3, FAST | {INTERVAL: str(FIRST_CHECK_S)})
    preferred = preferred_back_in_sync(cluster)
    in_sync_at = time.monotonic()
    assert in_sync_at < started + FIRST_CHECK_S - 1, "too slow to see leadership stay away"
    while time.monotonic() < started + FIRST_CHECK_S - 0.2:
        assert partition(cluster).leader != preferred, "moved back before the imbalance check"
        time.sleep(0.05)
    wait_until(
        lambda: partition(cluster).leader == preferred,
        2 * FIRST_CHECK_S,
        "the imbalance check to move leadership back",
    )
    back = partition(cluster)
    # the broker led none of its one preferred partition: 100% > the default 10%
    assert back.last_leader_rebalance == {
        "leader_epoch": back.leader_epoch,
        "led": 0,
        "preferred": 1,
        "percentage": 10,
    }


@pytest.mark.parametrize(
    "settings",
    [{PERCENTAGE: "100"}, {"auto.leader.rebalance.enable": "false"}],
    ids=["imbalance-not-above-the-percentage", "rebalance-disabled"],
)
def test_leadership_stays_away_until_elect_leaders(cluster_factory, settings):
    cluster = cluster_factory(3, FAST | {INTERVAL: "1"} | settings)
    preferred = preferred_back_in_sync(cluster)
    stays_until = time.monotonic() + 3  # three imbalance checks
    while time.monotonic() < stays_until:
        assert partition(cluster).leader != preferred
        time.sleep(0.05)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("back", 0)]).result(10)
    assert elected == {TopicPartition("back", 0): None}
    back = partition(cluster)
    assert back.leader == preferred and back.last_leader_rebalance is None
