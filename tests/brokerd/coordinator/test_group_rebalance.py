"""The classic group protocol's state machine, in-process against fakes of the broker's ports:
joins, syncs, heartbeats and leaves, generation bumps, session timeouts on a fake clock, the
rebalance timeout, static members, and a coordinator that takes a group over from another."""

from __future__ import annotations

import asyncio

import pytest
from kafka.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    MemberIdRequiredError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from brokerd.coordinator.classic_group import GroupState, Member
from brokerd.coordinator.group_coordinator import GroupCoordinator
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from tests.brokerd.coordinator.fakes import (
    FakeClock,
    FakeMetadata,
    FakeReplicas,
    group_coordinator,
    hosted,
)

pytestmark = pytest.mark.unit

PARTITIONS = 3
SESSION_MS = 10_000
GROUP = "g"


class Cluster:
    """One broker's group coordinator over fake replicas of every offsets partition."""

    def __init__(self, replicas: FakeReplicas | None = None, clock: FakeClock | None = None):
        self.metadata = FakeMetadata()
        self.replicas = replicas or FakeReplicas()
        if replicas is None:
            hosted(self.replicas, self.metadata, OFFSETS_TOPIC, PARTITIONS)
        self.clock = clock or FakeClock()
        parts = group_coordinator(self.replicas, self.metadata, PARTITIONS, 60_000, self.clock)
        self.manager, self.classic, self.coordinator = parts.groups, parts.classic, parts.coordinator
        self.coordinator.on_metadata_change()

    def group(self):
        return self.manager.get_group(GROUP)


def candidate(
    member_id: str = "",
    instance_id: str | None = None,
    rebalance_timeout_ms: int = SESSION_MS,
    subscription: bytes = b"s",
) -> Member:
    return Member(
        member_id,
        instance_id,
        "client",
        "127.0.0.1",
        SESSION_MS,
        rebalance_timeout_ms,
        "consumer",
        [("range", subscription)],
    )


async def join(coordinator: GroupCoordinator, member: Member) -> dict:
    """JoinGroup as a v4+ client does: a new dynamic member comes back with its id."""
    joined = await coordinator.join(GROUP, member, requires_known_member_id=True)
    if joined["error_code"] != MemberIdRequiredError.errno:
        return joined
    member.member_id = joined["member_id"]
    return await coordinator.join(GROUP, member, requires_known_member_id=True)


async def stable_group(coordinator: GroupCoordinator, *members: Member) -> list[dict]:
    """Join ``members`` together and sync them (the leader assigns each its member id)."""
    for member in members:
        if not member.member_id and member.group_instance_id is None:
            required = await coordinator.join(GROUP, member, requires_known_member_id=True)
            assert required["error_code"] == MemberIdRequiredError.errno
            member.member_id = required["member_id"]
    joins = await asyncio.gather(*(coordinator.join(GROUP, m, True) for m in members))
    leader = joins[0]["leader"]
    assignment = {j["member_id"]: j["member_id"].encode() for j in joins}
    await asyncio.gather(
        *(
            coordinator.sync(
                GROUP,
                j["member_id"],
                None,
                j["generation_id"],
                assignment if j["member_id"] == leader else {},
            )
            for j in joins
        )
    )
    return joins


async def second_member_joining(coordinator: GroupCoordinator) -> tuple[Member, Member, asyncio.Task]:
    """A Stable group of one member, and a second member's JoinGroup under way: the group
    is PreparingRebalance, waiting for the first to rejoin."""
    first, second = candidate(), candidate()
    await stable_group(coordinator, first)
    joining = asyncio.create_task(join(coordinator, second))
    await asyncio.sleep(0)
    return first, second, joining


def test_a_new_member_gets_a_member_id_then_leads_generation_1():
    async def scenario():
        cluster = Cluster()
        member = candidate()
        required = await cluster.coordinator.join(GROUP, member, requires_known_member_id=True)
        assert required["error_code"] == MemberIdRequiredError.errno
        member.member_id = required["member_id"]
        joined = await cluster.coordinator.join(GROUP, member, True)
        assert (joined["generation_id"], joined["leader"]) == (1, member.member_id)
        assert [m["member_id"] for m in joined["members"]] == [member.member_id]
        assert cluster.group().state == GroupState.COMPLETING_REBALANCE
        assignment = await cluster.coordinator.sync(
            GROUP, member.member_id, None, 1, {member.member_id: b"all"}
        )
        assert assignment == b"all"
        assert cluster.group().state == GroupState.STABLE

    asyncio.run(scenario())


def test_a_second_member_makes_everyone_rejoin_in_the_next_generation():
    async def scenario():
        cluster = Cluster()
        first, second, second_join = await second_member_joining(cluster.coordinator)
        with pytest.raises(RebalanceInProgressError):
            cluster.coordinator.heartbeat(GROUP, first.member_id, None, 1)
        first_join = await cluster.coordinator.join(GROUP, first, True)
        second_joined = await second_join
        assert first_join["generation_id"] == second_joined["generation_id"] == 2
        assert first_join["leader"] == first.member_id
        assert len(first_join["members"]) == 2 and second_joined["members"] == []
        follower_sync = asyncio.create_task(cluster.coordinator.sync(GROUP, second.member_id, None, 2, {}))
        await asyncio.sleep(0)
        assert not follower_sync.done()  # a follower waits for the leader's assignment
        await cluster.coordinator.sync(
            GROUP, first.member_id, None, 2, {first.member_id: b"a", second.member_id: b"b"}
        )
        assert await follower_sync == b"b"
        cluster.coordinator.heartbeat(GROUP, second.member_id, None, 2)

    asyncio.run(scenario())


def test_requests_from_an_old_generation_or_an_unknown_member_are_refused():
    async def scenario():
        cluster = Cluster()
        member = candidate()
        await stable_group(cluster.coordinator, member)
        with pytest.raises(IllegalGenerationError):
            cluster.coordinator.heartbeat(GROUP, member.member_id, None, 0)
        with pytest.raises(UnknownMemberIdError):
            cluster.coordinator.heartbeat(GROUP, "stranger", None, 1)
        with pytest.raises(IllegalGenerationError):
            await cluster.coordinator.commit(GROUP, 7, member.member_id, None, {})

    asyncio.run(scenario())


def test_a_member_whose_session_times_out_is_removed_and_the_rest_rebalance():
    async def scenario():
        cluster = Cluster()
        stays, goes = candidate(), candidate()
        await stable_group(cluster.coordinator, stays, goes)
        cluster.clock.advance(SESSION_MS / 1000 - 1)
        cluster.coordinator.heartbeat(GROUP, stays.member_id, None, 1)
        cluster.classic.expire_sessions()
        assert set(cluster.group().members) == {stays.member_id, goes.member_id}
        cluster.clock.advance(1)
        cluster.classic.expire_sessions()
        assert set(cluster.group().members) == {stays.member_id}
        assert cluster.group().state == GroupState.PREPARING_REBALANCE
        rejoined = await cluster.coordinator.join(GROUP, stays, True)
        assert rejoined["generation_id"] == 2 and len(rejoined["members"]) == 1

    asyncio.run(scenario())


def test_a_member_id_handed_out_but_never_used_expires_after_the_session_timeout():
    async def scenario():
        cluster = Cluster()
        member = candidate()
        required = await cluster.coordinator.join(GROUP, member, requires_known_member_id=True)
        assert required["error_code"] == MemberIdRequiredError.errno
        cluster.clock.advance(SESSION_MS / 1000)
        cluster.classic.expire_sessions()
        member.member_id = required["member_id"]
        with pytest.raises(UnknownMemberIdError):
            await cluster.coordinator.join(GROUP, member, True)

    asyncio.run(scenario())


def test_the_rebalance_timeout_drops_dynamic_members_that_did_not_rejoin():
    async def scenario():
        cluster = Cluster()
        stays, silent = candidate(rebalance_timeout_ms=50), candidate(rebalance_timeout_ms=50)
        await stable_group(cluster.coordinator, stays, silent)
        rejoined = await asyncio.wait_for(cluster.coordinator.join(GROUP, stays, True), 5)
        assert rejoined["generation_id"] == 2
        assert [m["member_id"] for m in rejoined["members"]] == [stays.member_id]
        with pytest.raises(UnknownMemberIdError):
            cluster.coordinator.heartbeat(GROUP, silent.member_id, None, 1)

    asyncio.run(scenario())


def test_leaving_rebalances_the_others_and_the_last_one_out_leaves_an_empty_group():
    async def scenario():
        cluster = Cluster()
        first, second = candidate(), candidate()
        await stable_group(cluster.coordinator, first, second)
        assert cluster.coordinator.leave(GROUP, [(second.member_id, None)]) == [None]
        assert cluster.group().state == GroupState.PREPARING_REBALANCE
        await cluster.coordinator.join(GROUP, first, True)
        assert cluster.coordinator.leave(GROUP, [(first.member_id, None)]) == [None]
        assert cluster.group().state == GroupState.EMPTY
        assert cluster.group().generation == 3
        outcome = cluster.coordinator.leave(GROUP, [(first.member_id, None)])
        assert isinstance(outcome[0], UnknownMemberIdError)

    asyncio.run(scenario())


def test_a_restarted_static_member_takes_its_place_back_without_a_rebalance():
    async def scenario():
        cluster = Cluster()
        before = candidate(instance_id="host-1")
        joins = await stable_group(cluster.coordinator, before)
        old_id = joins[0]["member_id"]
        after = await cluster.coordinator.join(GROUP, candidate(instance_id="host-1"), True)
        assert after["generation_id"] == 1 and after["member_id"] != old_id
        assert cluster.group().state == GroupState.STABLE
        assert (
            await cluster.coordinator.sync(GROUP, after["member_id"], "host-1", 1, {}) == old_id.encode()
        )  # the assignment the leader gave its previous incarnation
        with pytest.raises(FencedInstanceIdError):
            cluster.coordinator.heartbeat(GROUP, old_id, "host-1", 1)

    asyncio.run(scenario())


def test_commits_wait_out_only_the_completing_phase_of_a_rebalance():
    async def scenario():
        cluster = Cluster()
        first, _, second_join = await second_member_joining(cluster.coordinator)
        await cluster.coordinator.commit(GROUP, 1, first.member_id, None, {})  # preparing
        await cluster.coordinator.join(GROUP, first, True)
        await second_join
        with pytest.raises(RebalanceInProgressError):  # completing: no assignment yet
            await cluster.coordinator.commit(GROUP, 2, first.member_id, None, {})

    asyncio.run(scenario())


def test_a_new_coordinator_restores_the_group_and_its_members_keep_their_sessions():
    async def scenario():
        old = Cluster()
        kept, lapsed = candidate(), candidate()
        await stable_group(old.coordinator, kept, lapsed)
        new = Cluster(old.replicas, FakeClock(old.clock.now + 500))
        group = new.group()
        assert (group.state, group.generation, group.leader_id) == (GroupState.STABLE, 1, kept.member_id)
        assert group.members[lapsed.member_id].assignment == lapsed.member_id.encode()
        new.clock.advance(SESSION_MS / 1000 - 1)
        new.coordinator.heartbeat(GROUP, kept.member_id, None, 1)
        new.clock.advance(1)
        new.classic.expire_sessions()
        assert set(new.group().members) == {kept.member_id}

    asyncio.run(scenario())


def test_members_waiting_on_a_partition_this_broker_lost_look_for_the_new_coordinator():
    async def scenario():
        cluster = Cluster()
        first, _, waiting = await second_member_joining(cluster.coordinator)
        cluster.replicas.partitions[(OFFSETS_TOPIC, cluster.manager.partition_of(GROUP))].is_leader = False
        cluster.coordinator.on_metadata_change()
        with pytest.raises(NotCoordinatorError):
            await waiting
        with pytest.raises(NotCoordinatorError):
            cluster.coordinator.heartbeat(GROUP, first.member_id, None, 1)
        assert cluster.metadata.refreshes > 0  # it looked again before refusing

    asyncio.run(scenario())
