"""The controller's placement and election rules, as pure functions."""

from kafka.errors import ElectionNotNeededError, EligibleLeadersNotAvailableError

from brokerd.controller import ELECTIONS, assign_replicas, elect_leader
from brokerd.state import PartitionRecord


def test_round_robin_placement_matches_the_seeds_cases():
    # CASE1: 3 brokers, replication 3, 2 partitions: leaders on brokers 1 and 2.
    assert assign_replicas([1, 2, 3], 2, 3) == [[1, 2, 3], [2, 3, 1]]
    # CASE2: 3 partitions: one leader on each broker.
    assert [r[0] for r in assign_replicas([1, 2, 3], 3, 3)] == [1, 2, 3]
    assert assign_replicas([1, 2, 3], 3, 1, start=1) == [[2], [3], [1]]


def record(leader, isr, replicas=(1, 2, 3)):
    return PartitionRecord(0, list(replicas), leader=leader, leader_epoch=4, isr=list(isr))


def test_a_live_in_sync_leader_is_kept():
    assert elect_leader(record(2, [1, 2, 3]), [1, 2, 3], {2, 3}, False, False) is None


def test_a_dead_leader_is_replaced_by_the_first_live_in_sync_replica():
    assert elect_leader(record(1, [1, 2, 3]), [2, 3], {2, 3}, False, False) == 2
    assert elect_leader(record(1, [1, 3]), [3], {2, 3}, False, False) == 3


def test_no_in_sync_replica_left_means_offline_unless_unclean_election_is_allowed():
    assert elect_leader(record(1, [1]), [1], {2, 3}, False, False) == -1
    assert elect_leader(record(1, [1]), [1], {2, 3}, True, False) == 2


def test_the_preferred_replica_takes_leadership_back_once_in_sync():
    assert elect_leader(record(2, [1, 2, 3]), [1, 2, 3], {1, 2, 3}, False, True) == 1
    assert elect_leader(record(2, [2, 3]), [2, 3], {1, 2, 3}, False, True) is None


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
