"""The KIP-848 consumer group coordinator in-process, against fakes of its ports: joining,
epochs, revoke-before-assign between two members, fencing, static members, commits, and a
second coordinator that replays the first one's records (a failover)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest
from kafka.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)

from brokerd.coordinator.consumer_group.coordinator import ConsumerGroupConfig, ConsumerGroupCoordinator
from brokerd.coordinator.consumer_group.heartbeat import Heartbeat, HeartbeatResult
from brokerd.coordinator.consumer_group.model import ConsumerGroup, ConsumerGroupState
from brokerd.coordinator.consumer_group.records import KEY_VERSIONS, ConsumerGroupRecord, Record

pytestmark = pytest.mark.unit

TOPIC = "orders"
TOPIC_ID = uuid.UUID(int=7)
SESSION_MS = 45000


class FakeGroupsLog:
    """The GroupMetadataManager as the coordinator sees it: its consumer groups, the records
    appended, and the classic groups' sizes."""

    def __init__(self) -> None:
        self.written: list[Record] = []
        self.classic: dict[str, int] = {}
        self.groups: dict[str, ConsumerGroup] = {}

    def require_loaded(self, key: str) -> int:
        return 0

    def group_of(self, group_id: str, kind: type[ConsumerGroup]) -> ConsumerGroup | None:
        return self.groups.get(group_id)

    def groups_of(self, kind: type[ConsumerGroup]) -> list[ConsumerGroup]:
        return list(self.groups.values())

    def add_group(self, group: ConsumerGroup) -> ConsumerGroup:
        self.groups[group.group_id] = group
        return group

    def restore_group(self, group: ConsumerGroup) -> None:
        self.groups[group.group_id] = group

    def remove_group(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

    async def append_records(self, group_id: str, records: Sequence[Record]) -> None:
        self.written += records

    def classic_group_size(self, group_id: str) -> int | None:
        return self.classic.get(group_id)

    def drop_classic_group(self, group_id: str) -> Record:
        del self.classic[group_id]
        return (b"classic-tombstone", None)

    def replayable(self) -> list[ConsumerGroupRecord]:
        import struct

        return [
            ConsumerGroupRecord(struct.unpack_from(">h", k)[0], k, v)
            for k, v in self.written
            if struct.unpack_from(">h", k)[0] in KEY_VERSIONS
        ]


class Topics:
    def __init__(self) -> None:
        self.topics = {TOPIC: (TOPIC_ID, 6)}

    def topic_partitions(self) -> dict[str, tuple[uuid.UUID, int]]:
        return self.topics


class Timeouts:
    def consumer_session_timeout_ms(self, group_id: str) -> int:
        return SESSION_MS

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        return 5000


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def coordinator(
    log: FakeGroupsLog | None = None, max_size: int = 100
) -> tuple[ConsumerGroupCoordinator, Clock]:
    clock = Clock()
    return (
        ConsumerGroupCoordinator(
            ConsumerGroupConfig(("uniform", "range"), max_size),
            log or FakeGroupsLog(),
            Topics(),
            Timeouts(),
            clock,
        ),
        clock,
    )


def join(c: ConsumerGroupCoordinator, member_id: str, **extra: object) -> HeartbeatResult:
    request = Heartbeat(
        "g", member_id, 0, rebalance_timeout_ms=30000, subscribed_topic_names=[TOPIC], owned={}
    )
    for name, value in extra.items():
        setattr(request, name, value)
    return asyncio.run(c.heartbeat(request))


def beat(
    c: ConsumerGroupCoordinator, member_id: str, epoch: int, owned: dict | None = None
) -> HeartbeatResult:
    return asyncio.run(c.heartbeat(Heartbeat("g", member_id, epoch, owned=owned)))


def partitions(result: HeartbeatResult) -> frozenset[int]:
    assert result.assignment is not None
    return result.assignment.get(TOPIC_ID, frozenset())


def test_two_members_share_the_topic_with_revocation_before_assignment() -> None:
    c, _ = coordinator()
    a = join(c, "a")
    assert (a.member_epoch, partitions(a)) == (1, frozenset(range(6)))
    b = join(c, "b")
    assert b.member_epoch == 2
    assert partitions(b) == frozenset()  # a still has them all
    a2 = beat(c, "a", 1, {TOPIC_ID: frozenset(range(6))})
    assert a2.member_epoch == 1  # must revoke first
    kept = partitions(a2)
    assert len(kept) == 3
    a3 = beat(c, "a", 1, {TOPIC_ID: kept})
    assert a3.member_epoch == 2
    b2 = beat(c, "b", 2, {})
    assert partitions(b2) == frozenset(range(6)) - kept
    assert c.store.groups["g"].state() == ConsumerGroupState.STABLE


def test_a_member_that_leaves_frees_its_partitions_for_the_others() -> None:
    c, _ = coordinator()
    join(c, "a")
    join(c, "b")
    a = beat(c, "a", 1, {TOPIC_ID: frozenset(range(6))})
    beat(c, "a", 1, {TOPIC_ID: partitions(a)})
    b = beat(c, "b", 2, {})
    left = asyncio.run(c.heartbeat(Heartbeat("g", "b", -1)))
    assert left.member_epoch == -1
    a_after = beat(c, "a", 2, {TOPIC_ID: partitions(a)})
    assert partitions(a_after) == frozenset(range(6))
    assert a_after.member_epoch == 3
    assert partitions(b)  # b had some before it left


def test_epochs_are_checked() -> None:
    c, _ = coordinator()
    join(c, "a")
    with pytest.raises(FencedMemberEpochError, match="greater epoch"):
        beat(c, "a", 5, {})
    with pytest.raises(UnknownMemberIdError):
        beat(c, "nobody", 1, {})
    join(c, "b")
    beat(c, "a", 1, {TOPIC_ID: frozenset(range(6))})  # a is told to revoke, stays at epoch 1
    with pytest.raises(GroupIdNotFoundError):
        asyncio.run(c.heartbeat(Heartbeat("other", "x", 3)))


def test_requests_are_validated_as_kafka_does() -> None:
    c, _ = coordinator()
    with pytest.raises(InvalidRequestError, match="RebalanceTimeoutMs must be provided"):
        asyncio.run(c.heartbeat(Heartbeat("g", "a", 0, subscribed_topic_names=[TOPIC], owned={})))
    with pytest.raises(InvalidRequestError, match="TopicPartitions must be empty"):
        join(c, "a", owned={TOPIC_ID: frozenset({1})})
    with pytest.raises(InvalidRequestError, match="MemberId can't be empty"):
        join(c, "")
    with pytest.raises(UnsupportedAssignorError, match="ServerAssignor sticky is not supported"):
        join(c, "a", server_assignor="sticky")


def test_session_timeout_fences_the_member() -> None:
    c, clock = coordinator()
    join(c, "a")
    join(c, "b")
    clock.now += SESSION_MS / 1000 - 1
    beat(c, "b", 2, {})
    clock.now += 2
    asyncio.run(c.expire_sessions())
    assert set(c.store.groups["g"].members) == {"b"}
    with pytest.raises(UnknownMemberIdError):
        beat(c, "a", 1, {})


def test_group_size_and_static_members() -> None:
    c, _ = coordinator(max_size=1)
    join(c, "a", instance_id="i1")
    with pytest.raises(GroupMaxSizeReachedError):
        join(c, "b")
    with pytest.raises(UnreleasedInstanceIdError):
        join(c, "a2", instance_id="i1")
    gone = asyncio.run(c.heartbeat(Heartbeat("g", "a", -2, instance_id="i1")))
    assert gone.member_epoch == -2
    epoch = c.store.groups["g"].group_epoch
    back = join(c, "a2", instance_id="i1")
    assert partitions(back) == frozenset(range(6))
    assert set(c.store.groups["g"].members) == {"a2"}
    assert c.store.groups["g"].group_epoch == epoch  # taking its place back is no reason to assign


def test_offset_commits_need_the_current_member_epoch() -> None:
    c, _ = coordinator()
    join(c, "a")
    c.store.groups["g"].validate_offset_commit("a", 1)
    with pytest.raises(StaleMemberEpochError):
        c.store.groups["g"].validate_offset_commit("a", 0)
    with pytest.raises(UnknownMemberIdError):
        c.store.groups["g"].validate_offset_commit("b", 1)


def test_a_new_coordinator_carries_on_with_the_stored_group() -> None:
    log = FakeGroupsLog()
    c, _ = coordinator(log)
    join(c, "a")
    join(c, "b")
    a = beat(c, "a", 1, {TOPIC_ID: frozenset(range(6))})
    beat(c, "a", 1, {TOPIC_ID: partitions(a)})
    b = beat(c, "b", 2, {})
    successor, _ = coordinator()
    successor.load(0, log.replayable())
    group = successor.store.groups["g"]
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert group.members["a"].assigned == {TOPIC_ID: partitions(a)}
    assert group.members["b"].member_epoch == 2
    # the members heartbeat on with their epochs
    assert beat(successor, "b", 2, {TOPIC_ID: partitions(b)}).member_epoch == 2
    assert successor.store.groups["g"].state() == ConsumerGroupState.STABLE


def test_an_empty_classic_group_is_converted_a_busy_one_refused() -> None:
    log = FakeGroupsLog()
    log.classic = {"g": 0}
    c, _ = coordinator(log)
    assert join(c, "a").member_epoch == 1
    assert "g" not in log.classic
    log.classic = {"busy": 2}
    with pytest.raises(GroupIdNotFoundError, match="is not a consumer group"):
        asyncio.run(
            c.heartbeat(
                Heartbeat("busy", "a", 0, rebalance_timeout_ms=1, subscribed_topic_names=[TOPIC], owned={})
            )
        )


def keeps_offsets_of(c: ConsumerGroupCoordinator, group_id: str):
    """What offset retention asks of a consumer group: one with members keeps the offsets of
    the topics it subscribes to (None: no such group with members)."""
    group = c.store.group_of(group_id, ConsumerGroup)
    return group.is_subscribed_to if group is not None and group.has_members() else None


def test_a_live_group_keeps_the_offsets_of_its_subscribed_topics() -> None:
    c, _ = coordinator()
    assert keeps_offsets_of(c, "g") is None
    join(c, "a")
    keeps = keeps_offsets_of(c, "g")
    assert keeps is not None and keeps(TOPIC) and not keeps("elsewhere")
    asyncio.run(c.heartbeat(Heartbeat("g", "a", -1)))
    assert keeps_offsets_of(c, "g") is None


def test_a_new_regex_brings_its_topics_at_the_next_heartbeat() -> None:
    """As Kafka resolves a regex in the background: the heartbeat that subscribes to a regex no
    member had gets the named topics only, the next one the matching topics too; a regex the
    group no longer has (its member left) is resolved again when subscribed to anew."""
    c, _ = coordinator()
    payments = uuid.UUID(int=8)
    c.topics.topics["payments"] = (payments, 2)  # type: ignore[attr-defined]
    for _rejoin in range(2):
        first = join(c, "a", subscribed_topic_names=["payments"], subscribed_topic_regex="^ord.*")
        assert first.assignment == {payments: frozenset({0, 1})}
        second = beat(c, "a", first.member_epoch, {payments: frozenset({0, 1})})
        assert second.member_epoch > first.member_epoch
        assert second.assignment == {payments: frozenset({0, 1}), TOPIC_ID: frozenset(range(6))}
        left = asyncio.run(c.heartbeat(Heartbeat("g", "a", -1)))
        assert left.member_epoch == -1
    b = join(c, "b", subscribed_topic_names=[], subscribed_topic_regex="^ord.*")
    assert b.assignment == {}
    other = join(c, "c", subscribed_topic_names=[], subscribed_topic_regex="^ord.*")
    assert other.member_epoch == b.member_epoch + 1  # the regex is resolved: no waiting
    assert asyncio.run(c.heartbeat(Heartbeat("g", "b", b.member_epoch, owned={}))).assignment
