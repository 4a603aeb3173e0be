"""KIP-848's server-side assignors and reconciliation, in-process: balanced and sticky
targets, and members that revoke before anyone else is given their partitions."""

from __future__ import annotations

import uuid

import pytest

from brokerd.coordinator.consumer_group.assignors import MemberSubscription, range_, uniform
from brokerd.coordinator.consumer_group.model import ConsumerGroupMember, MemberState
from brokerd.coordinator.consumer_group.reconciliation import reconcile

pytestmark = pytest.mark.unit

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


def sizes(target: dict) -> dict[str, int]:
    return {m: sum(len(p) for p in a.values()) for m, a in target.items()}


def test_uniform_splits_evenly_and_keeps_partitions_where_they_were() -> None:
    both = frozenset({T1})
    first = uniform([MemberSubscription("a", both), MemberSubscription("b", both)], {T1: 6}, {})
    assert sizes(first) == {"a": 3, "b": 3}
    assert first["a"][T1] | first["b"][T1] == frozenset(range(6))
    third = uniform([MemberSubscription(m, both) for m in ("a", "b", "c")], {T1: 6}, first)
    assert sizes(third) == {"a": 2, "b": 2, "c": 2}
    # each of a and b gave up one partition and kept the others
    assert third["a"][T1] <= first["a"][T1] and third["b"][T1] <= first["b"][T1]
    alone = uniform([MemberSubscription("b", both)], {T1: 6}, third)
    assert alone["b"][T1] == frozenset(range(6))


def test_uniform_gives_each_topic_only_to_its_subscribers() -> None:
    target = uniform(
        [MemberSubscription("a", frozenset({T1})), MemberSubscription("b", frozenset({T1, T2}))],
        {T1: 4, T2: 2},
        {},
    )
    assert T2 not in target["a"]
    assert target["b"][T2] == frozenset({0, 1})
    assert sizes(target) == {"a": 3, "b": 3}


def test_range_assigns_contiguous_ranges_per_topic() -> None:
    target = range_(
        [MemberSubscription("a", frozenset({T1, T2})), MemberSubscription("b", frozenset({T1, T2}))],
        {T1: 5, T2: 2},
        {},
    )
    assert target["a"] == {T1: frozenset({0, 1, 2}), T2: frozenset({0})}
    assert target["b"] == {T1: frozenset({3, 4}), T2: frozenset({1})}


def member(epoch: int, assigned: dict) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "m", member_epoch=epoch, assigned={t: frozenset(p) for t, p in assigned.items()}
    )


def test_partitions_are_revoked_before_the_member_moves_to_the_new_epoch() -> None:
    m = member(3, {T1: {0, 1, 2}})
    reconcile(m, 4, {T1: frozenset({0})}, lambda t, p: None, None)
    assert m.state == MemberState.UNREVOKED_PARTITIONS
    assert m.member_epoch == 3
    assert m.assigned == {T1: frozenset({0})}
    assert m.pending_revocation == {T1: frozenset({1, 2})}
    # a heartbeat that still owns a revoked partition changes nothing
    reconcile(m, 4, {T1: frozenset({0})}, lambda t, p: None, {T1: frozenset({0, 1})})
    assert m.state == MemberState.UNREVOKED_PARTITIONS and m.member_epoch == 3
    # once it says it let them go, it reaches the target epoch
    reconcile(m, 4, {T1: frozenset({0})}, lambda t, p: None, {T1: frozenset({0})})
    assert (m.state, m.member_epoch, m.pending_revocation) == (MemberState.STABLE, 4, {})
    assert m.previous_member_epoch == 3


def test_a_partition_another_member_still_has_is_assigned_only_once_released() -> None:
    owners = {(T1, 2): 3}
    m = member(3, {T1: {0}})
    reconcile(m, 4, {T1: frozenset({0, 1, 2})}, lambda t, p: owners.get((t, p)), {T1: frozenset({0})})
    assert m.state == MemberState.UNRELEASED_PARTITIONS
    assert m.member_epoch == 4
    assert m.assigned == {T1: frozenset({0, 1})}
    owners.clear()
    reconcile(m, 4, {T1: frozenset({0, 1, 2})}, lambda t, p: owners.get((t, p)), None)
    assert m.state == MemberState.STABLE
    assert m.assigned == {T1: frozenset({0, 1, 2})}
