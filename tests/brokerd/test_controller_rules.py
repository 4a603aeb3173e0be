"""The controller's placement and election rules, as pure functions."""

import pytest
from kafka.errors import ElectionNotNeededError, EligibleLeadersNotAvailableError

from brokerd.controller import (
    ELECTIONS,
    PreferredLeadership,
    assign_replicas,
    elect_leader,
    preferred_leadership,
)
from brokerd.metadata.registration import PartitionChangeBuilder
from brokerd.state import PartitionRegistration, TopicImage

pytestmark = pytest.mark.unit


def test_round_robin_placement_matches_the_seeds_cases():
    # CASE1: 3 brokers, replication 3, 2 partitions: leaders on brokers 1 and 2.
    assert assign_replicas([1, 2, 3], 2, 3) == [[1, 2, 3], [2, 3, 1]]
    # CASE2: 3 partitions: one leader on each broker.
    assert [r[0] for r in assign_replicas([1, 2, 3], 3, 3)] == [1, 2, 3]
    assert assign_replicas([1, 2, 3], 3, 1, start=1) == [[2], [3], [1]]


def record(leader, isr, replicas=(1, 2, 3)):
    return PartitionChangeBuilder.of(
        PartitionRegistration(0, list(replicas), leader=leader, leader_epoch=4, isr=list(isr))
    )


def test_a_live_in_sync_leader_is_kept():
    assert elect_leader(record(2, [1, 2, 3]), [1, 2, 3], {2, 3}, False) is None


def test_a_dead_leader_is_replaced_by_the_first_live_in_sync_replica():
    assert elect_leader(record(1, [1, 2, 3]), [2, 3], {2, 3}, False) == 2
    assert elect_leader(record(1, [1, 3]), [3], {2, 3}, False) == 3


def test_no_in_sync_replica_left_means_offline_unless_unclean_election_is_allowed():
    assert elect_leader(record(1, [1]), [1], {2, 3}, False) == -1
    assert elect_leader(record(1, [1]), [1], {2, 3}, True) == 2


def test_a_preferred_replica_back_in_sync_does_not_take_leadership_on_sight():
    assert elect_leader(record(2, [1, 2, 3]), [1, 2, 3], {1, 2, 3}, False) is None


def topics_led_by(leaders: list[int]) -> dict[str, TopicImage]:
    """One topic whose partition p has replicas [p%3+1, ...] (its preferred leader first)."""
    partitions = {
        p: PartitionRegistration(
            p, [p % 3 + 1, (p + 1) % 3 + 1, (p + 2) % 3 + 1], leader=leader, isr=[1, 2, 3]
        )
        for p, leader in enumerate(leaders)
    }
    return {"t": TopicImage("t", "id", {}, partitions)}


def test_the_imbalance_of_each_broker_is_its_preferred_partitions_led_elsewhere():
    shares = preferred_leadership(topics_led_by([2, 2, 3, 1, 2, -1]))  # preferred 1,2,3,1,2,3
    assert {b: (s.preferred, s.led_elsewhere) for b, s in shares.items()} == {
        1: (2, [("t", 0)]),
        2: (2, []),
        3: (2, [("t", 5)]),
    }


def test_only_an_imbalance_above_the_percentage_moves_leaders_back():
    share = PreferredLeadership(1, preferred=10, led_elsewhere=[("t", 0)])  # 10% elsewhere
    assert not share.exceeds(10) and share.exceeds(9)
    assert PreferredLeadership(1, preferred=4).exceeds(0) is False  # all led at home
    assert share.reason(8, 9) == {"leader_epoch": 8, "led": 9, "preferred": 10, "percentage": 9}


def test_an_unclean_election_by_hand_prefers_a_live_in_sync_replica_then_any_live_one():
    unclean = ELECTIONS["unclean"]
    offline = record(-1, [1], replicas=(1, 2, 3))
    assert unclean(offline, [2, 3]) is None
    assert (offline.leader, offline.isr, offline.leader_epoch) == (2, [2], 5)
    assert offline.last_unclean_election == {"leader_epoch": 5, "isr": [1]}
    dead_leader = record(1, [1, 3])
    assert unclean(dead_leader, [2, 3]) is None and (dead_leader.leader, dead_leader.isr) == (3, [1, 3])
    assert dead_leader.last_unclean_election is None  # an in-sync replica took over: clean
    assert isinstance(unclean(record(2, [2]), [2, 3]), ElectionNotNeededError)
    nobody = record(-1, [1])
    assert isinstance(unclean(nobody, []), EligibleLeadersNotAvailableError)
    assert (nobody.leader, nobody.leader_epoch) == (-1, 4)
