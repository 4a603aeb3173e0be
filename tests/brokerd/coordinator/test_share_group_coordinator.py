"""The share group coordinator (KIP-932) in-process: joining with epoch 0, the group epoch
and the SimpleAssignor's assignment, heartbeats, leaving with -1, fencing stale epochs and
expired sessions."""

from __future__ import annotations

import pytest
from kafka.errors import (
    FencedMemberEpochError,
    GroupMaxSizeReachedError,
    NotCoordinatorError,
    UnknownMemberIdError,
)

from brokerd.coordinator.share_group.assignor import assign
from brokerd.coordinator.share_group.share_group import ShareGroup
from brokerd.coordinator.share_group.share_group_coordinator import ShareGroupConfig, ShareGroupCoordinator

pytestmark = pytest.mark.unit


class Ownership:
    """The GroupMetadataManager as the coordinator sees it: whether it coordinates the
    group, and its share groups."""

    def __init__(self) -> None:
        self.owned = True
        self.groups: dict[str, ShareGroup] = {}

    def require_loaded(self, key: str) -> int:
        if not self.owned:
            raise NotCoordinatorError(key)
        return 0

    def group_of(self, group_id: str, kind: type[ShareGroup]) -> ShareGroup | None:
        return self.groups.get(group_id)

    def groups_of(self, kind: type[ShareGroup]) -> list[ShareGroup]:
        return list(self.groups.values())

    def add_group(self, group: ShareGroup) -> ShareGroup:
        self.groups[group.group_id] = group
        return group


class Topics:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partition_count(self, topic: str) -> int | None:
        return self.counts.get(topic)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def coordinator(counts: dict[str, int], max_size: int = 10) -> tuple[ShareGroupCoordinator, Clock, Topics]:
    clock, topics = Clock(), Topics(counts)
    config = ShareGroupConfig(session_timeout_ms=45_000, heartbeat_interval_ms=5_000, max_size=max_size)
    return ShareGroupCoordinator(config, Ownership(), topics, clock=clock), clock, topics


def join(c: ShareGroupCoordinator, member: str, topics: list[str]):
    return c.heartbeat("g", member, 0, None, topics, "client", "/127.0.0.1")


def test_the_simple_assignor_shares_partitions_when_members_outnumber_them() -> None:
    subs = {"a": {"t"}, "b": {"t"}, "c": {"t", "u"}}
    assert assign(subs, {"t": 2, "u": 4}) == {
        "a": {"t": [0, 1]},
        "b": {"t": [0, 1]},
        "c": {"t": [0, 1], "u": [0, 1, 2, 3]},
    }
    assert assign({"a": {"t"}, "b": {"t"}}, {"t": 4}) == {"a": {"t": [0, 2]}, "b": {"t": [1, 3]}}


def test_members_join_get_the_group_epoch_and_their_assignment() -> None:
    c, _, _ = coordinator({"t": 1})
    first = join(c, "m1", ["t"])
    assert (first.member_epoch, first.assignment) == (c.store.groups["g"].group_epoch, {"t": [0]})
    second = join(c, "m2", ["t"])
    assert second.assignment == {"t": [0]}
    assert second.member_epoch > first.member_epoch
    again = c.heartbeat("g", "m1", first.member_epoch, None, None, "client", "h")
    assert again.member_epoch == second.member_epoch
    assert again.assignment is None  # unchanged: not sent again


def test_a_topic_created_after_the_subscription_is_assigned() -> None:
    c, _, topics = coordinator({})
    joined = join(c, "m1", ["later"])
    assert joined.assignment == {}
    topics.counts["later"] = 2
    beat = c.heartbeat("g", "m1", joined.member_epoch, None, None, "client", "h")
    assert beat.assignment == {"later": [0, 1]}


def test_leaving_and_unknown_members_and_stale_epochs() -> None:
    c, _, _ = coordinator({"t": 1})
    m1 = join(c, "m1", ["t"])
    join(c, "m2", ["t"])
    with pytest.raises(FencedMemberEpochError):
        c.heartbeat("g", "m1", m1.member_epoch + 5, None, None, "client", "h")
    assert c.heartbeat("g", "m1", -1, None, None, "client", "h").member_epoch == -1
    assert set(c.store.groups["g"].members) == {"m2"}
    with pytest.raises(UnknownMemberIdError):
        c.heartbeat("g", "m1", m1.member_epoch, None, None, "client", "h")


def test_a_member_that_stops_heartbeating_is_fenced_and_told_of_but_not_one_that_leaves() -> None:
    clock, removed = Clock(), []
    config = ShareGroupConfig(session_timeout_ms=45_000)
    c = ShareGroupCoordinator(
        config, Ownership(), Topics({"t": 1}), clock=clock, member_removed=lambda g, m: removed.append((g, m))
    )
    join(c, "m1", ["t"])
    join(c, "m2", ["t"])
    c.heartbeat("g", "m2", -1, None, None, "client", "h")
    assert "m2" not in c.store.groups["g"].members
    assert removed == []  # it closes its share sessions itself, after its last acknowledgements
    clock.now = 44.0
    c.expire_sessions()
    assert "m1" in c.store.groups["g"].members
    clock.now = 46.0
    c.expire_sessions()
    assert c.store.groups["g"].members == {}
    assert removed == [("g", "m1")]


def test_the_group_size_is_bounded() -> None:
    c, _, _ = coordinator({"t": 1}, max_size=1)
    join(c, "m1", ["t"])
    with pytest.raises(GroupMaxSizeReachedError):
        join(c, "m2", ["t"])
