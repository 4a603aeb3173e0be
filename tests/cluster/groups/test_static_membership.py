"""Static membership (KIP-345), MEMBER_ID_REQUIRED (KIP-394) and group metadata kept in
__consumer_offsets, on real brokers: raw requests where the exact error codes matter,
confluent-kafka consumers with group.instance.id where client behaviour does."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.protocol.api_key import ApiKey

from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.coordinator.records import partition_for
from brokerd.replication.broker_client import BrokerClient
from tests.cluster_harness import until_answered, wait_until
from tests.kafka_helpers import create_topic, settle

pytestmark = pytest.mark.cluster

TIMEOUT_S = 20.0
UNKNOWN_MEMBER_ID = 25
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
# Answers that only mean "the coordinator is not ready here yet": ask again.
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


class RawMember:
    """One group member driven request by request over its own connection."""

    def __init__(
        self,
        port: int,
        group: str,
        instance_id: str | None = None,
        session_timeout_ms: int = 30000,
        rebalance_timeout_ms: int = 30000,
    ):
        self.client = BrokerClient("127.0.0.1", port, f"raw-{instance_id}", TIMEOUT_S)
        self.group = group
        self.instance_id = instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.member_id = ""
        self.generation = -1

    async def join(self, member_id: str | None = None, version: int = 5):
        """One JoinGroup; remembers the member id and generation it was given."""
        response = await self.client.request(
            ApiKey.JoinGroup,
            version,
            {
                "group_id": self.group,
                "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms,
                "member_id": self.member_id if member_id is None else member_id,
                "group_instance_id": self.instance_id,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"subscription"}],
            },
            extra_timeout_s=self.rebalance_timeout_ms / 1000,
        )
        if response.error_code in (0, MEMBER_ID_REQUIRED):
            self.member_id = response.member_id
        if response.error_code == 0:
            self.generation = response.generation_id
        return response

    async def sync(self, assignments: dict[str, bytes] | None = None, member_id: str | None = None):
        return await self.client.request(
            ApiKey.SyncGroup,
            3,
            {
                "group_id": self.group,
                "generation_id": self.generation,
                "member_id": self.member_id if member_id is None else member_id,
                "group_instance_id": self.instance_id,
                "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
            },
        )

    async def heartbeat(self, member_id: str | None = None) -> int:
        response = await self.client.request(
            ApiKey.Heartbeat,
            3,
            {
                "group_id": self.group,
                "generation_id": self.generation,
                "member_id": self.member_id if member_id is None else member_id,
                "group_instance_id": self.instance_id,
            },
        )
        return response.error_code

    async def commit(self, topic: str, offset: int, member_id: str | None = None) -> int:
        response = await self.client.request(
            ApiKey.OffsetCommit,
            7,
            {
                "group_id": self.group,
                "generation_id_or_member_epoch": self.generation,
                "member_id": self.member_id if member_id is None else member_id,
                "group_instance_id": self.instance_id,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": offset,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
        )
        return response.topics[0].partitions[0].error_code

    async def stable(self, assignment: bytes) -> None:
        """Join as leader of a group of one, hand itself ``assignment`` and sync."""
        await until_answered(
            lambda: find_coordinator(self.client, self.group), lambda code: code == 0, "the group coordinator"
        )
        joined = await self.join()
        if joined.error_code == MEMBER_ID_REQUIRED:  # a dynamic member
            joined = await self.join()
        assert joined.error_code == 0 and joined.leader == self.member_id
        synced = await self.sync({self.member_id: assignment})
        assert (synced.error_code, synced.assignment) == (0, assignment)

    def close(self) -> None:
        self.client.close()


async def find_coordinator(client: BrokerClient, group: str) -> int:
    response = await client.request(ApiKey.FindCoordinator, 1, {"key": group, "key_type": 0})
    return response.error_code


async def describe(client: BrokerClient, group: str):
    response = await client.request(
        ApiKey.DescribeGroups, 4, {"groups": [group], "include_authorized_operations": False}
    )
    return response.groups[0]


def test_member_id_required_round_trip_and_unused_ids_expire(cluster):
    port = cluster.ports[1]

    async def scenario():
        idle = RawMember(port, "kip394", session_timeout_ms=1500)
        member = RawMember(port, "kip394")
        old_client = RawMember(port, "kip394-v3")
        try:
            await until_answered(
                lambda: find_coordinator(member.client, "kip394"), lambda c: c == 0, "the group coordinator"
            )
            # v4+: a dynamic member's first JoinGroup only hands out a member id ...
            first = await idle.join()
            assert first.error_code == MEMBER_ID_REQUIRED and first.member_id.startswith("raw-")
            assert (await member.join()).error_code == MEMBER_ID_REQUIRED
            assert member.member_id != idle.member_id
            # ... that the member joins with. The id the other one never used holds the join
            # phase back until its session timeout, not for the 30 s rebalance timeout.
            started = time.monotonic()
            joined = await member.join()
            assert joined.error_code == 0 and joined.leader == member.member_id
            assert [m.member_id for m in joined.members] == [member.member_id]
            assert time.monotonic() - started < 10
            assert (await idle.join()).error_code == UNKNOWN_MEMBER_ID
            # Before v4, a member joins at once.
            await until_answered(
                lambda: find_coordinator(old_client.client, "kip394-v3"),
                lambda c: c == 0,
                "the group coordinator",
            )
            legacy = await old_client.join(version=3)
            assert legacy.error_code == 0 and legacy.member_id
        finally:
            for m in (idle, member, old_client):
                m.close()

    asyncio.run(scenario())


def test_a_rejoining_static_member_replaces_the_old_one_which_is_fenced(cluster):
    port = cluster.ports[1]
    create_topic(cluster.bootstrap, "orders", 1)

    async def scenario():
        first = RawMember(port, "static", "instance-1")
        restarted = RawMember(port, "static", "instance-1")
        admin = BrokerClient("127.0.0.1", port, "admin", TIMEOUT_S)
        try:
            await first.stable(b"partitions of instance-1")
            # Same instance, empty member id: a new member id, the same generation and
            # assignment, no rebalance. The leader named is the old id, so the restarted
            # leader syncs as a follower and gets the stored assignment.
            rejoined = await restarted.join()
            assert rejoined.error_code == 0
            assert restarted.member_id not in ("", first.member_id)
            assert restarted.member_id.startswith("instance-1-")
            assert (rejoined.generation_id, rejoined.leader) == (first.generation, first.member_id)
            assert rejoined.members == []
            synced = await restarted.sync()
            assert (synced.error_code, synced.assignment) == (0, b"partitions of instance-1")
            assert await restarted.heartbeat() == 0
            # The old member id is fenced everywhere.
            assert await first.heartbeat() == FENCED_INSTANCE_ID
            assert (await first.sync()).error_code == FENCED_INSTANCE_ID
            assert await first.commit("orders", 5) == FENCED_INSTANCE_ID
            assert await restarted.commit("orders", 5) == 0
            group = await describe(admin, "static")
            assert group.group_state == "Stable"
            assert [(m.member_id, m.group_instance_id) for m in group.members] == [
                (restarted.member_id, "instance-1")
            ]
            # LeaveGroup v3: per-member outcomes; a static member leaves by instance id.
            left = await admin.request(
                ApiKey.LeaveGroup,
                3,
                {
                    "group_id": "static",
                    "members": [
                        {"member_id": first.member_id, "group_instance_id": "instance-1"},
                        {"member_id": "", "group_instance_id": "no-such-instance"},
                        {"member_id": "", "group_instance_id": "instance-1"},
                    ],
                },
            )
            assert left.error_code == 0
            assert [m.error_code for m in left.members] == [FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, 0]
            group = await describe(admin, "static")
            assert (group.group_state, group.members) == ("Empty", [])
        finally:
            for client in (first, restarted, admin):
                client.close()

    asyncio.run(scenario())


def test_groups_and_their_generations_survive_a_broker_restart(cluster):
    port = cluster.ports[1]

    async def before_restart():
        stable = RawMember(port, "kept-stable", "instance-1")
        emptied = RawMember(port, "kept-empty")
        deleted = RawMember(port, "deleted")
        try:
            await stable.stable(b"assignment")
            for member in (emptied, deleted):
                await member.stable(b"")
                left = await member.client.request(
                    ApiKey.LeaveGroup, 1, {"group_id": member.group, "member_id": member.member_id}
                )
                assert left.error_code == 0
            gone = await deleted.client.request(ApiKey.DeleteGroups, 1, {"groups_names": ["deleted"]})
            assert gone.results[0].error_code == 0
            return stable.member_id, stable.generation, emptied.generation
        finally:
            for member in (stable, emptied, deleted):
                member.close()

    async def after_restart(member_id: str, generation: int, emptied_generation: int):
        stable = RawMember(port, "kept-stable", "instance-1")
        stable.member_id, stable.generation = member_id, generation
        newcomer = RawMember(port, "kept-empty", "instance-2")
        admin = BrokerClient("127.0.0.1", port, "admin", TIMEOUT_S)
        try:
            # The member heartbeats its generation to the reloaded coordinator: still valid.
            assert (
                await until_answered(
                    stable.heartbeat, lambda c: c not in RETRIABLE, "the coordinator to load the group"
                )
                == 0
            )
            group = await describe(admin, "kept-stable")
            assert group.group_state == "Stable"
            assert [(m.member_id, m.group_instance_id, m.member_assignment) for m in group.members] == [
                (member_id, "instance-1", b"assignment")
            ]
            assert (await describe(admin, "kept-empty")).group_state == "Empty"
            assert (await describe(admin, "deleted")).group_state == "Dead"  # its tombstone
            joined = await newcomer.join()
            assert joined.generation_id == emptied_generation + 2  # emptied, then this one
        finally:
            for client in (stable, newcomer, admin):
                client.close()

    kept = asyncio.run(before_restart())
    cluster.stop()
    cluster.start()
    asyncio.run(after_restart(*kept))
    # The generation is a GroupMetadata record (key version 2: the group id) in Kafka's format.
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "reader", "enable.partition.eof": True}
    )
    consumer.assign([_offsets_partition(consumer, "kept-stable")])
    try:
        keys = set()
        wait_until(
            lambda: (
                keys.update(m.key() for m in consumer.consume(100, 0.2) if m.error() is None)
                or b"\x00\x02\x00\x0bkept-stable" in keys
            ),
            15,
            "the group metadata record",
        )
    finally:
        consumer.close()


def _offsets_partition(consumer: Consumer, group: str) -> TopicPartition:
    count = len(consumer.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC].partitions)
    return TopicPartition(OFFSETS_TOPIC, partition_for(group, count), 0)


class StaticMember:
    """A confluent-kafka consumer with a group.instance.id; counts its rebalance callbacks."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance_id: str):
        self.assigned: set[int] = set()
        self.assigns = self.revokes = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.instance.id": instance_id,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)

    def _on_assign(self, consumer, partitions):
        self.assigns += 1
        self.assigned = {p.partition for p in partitions}

    def _on_revoke(self, consumer, partitions):
        self.revokes += 1
        self.assigned = set()

    def poll(self) -> None:
        self.consumer.consume(100, 0.05)


def share_out(members: list[StaticMember], partitions: int) -> None:
    settle(
        members,
        lambda: (
            all(m.assigned for m in members)
            and set().union(*(m.assigned for m in members)) == set(range(partitions))
        ),
        "the members to share the partitions",
    )


def test_a_restarted_static_consumer_gets_its_partitions_back_without_a_rebalance(cluster):
    create_topic(cluster.bootstrap, "work", 4)
    stays = StaticMember(cluster.bootstrap, "statics", "work", "stays")
    restarts = StaticMember(cluster.bootstrap, "statics", "work", "restarts")
    members = [stays, restarts]
    try:
        share_out(members, 4)
        before, calls = restarts.assigned, (stays.assigns, stays.revokes)
        old_member_id = restarts.consumer.memberid()
        restarts.consumer.close()  # a static member's close sends no LeaveGroup
        members = [stays, StaticMember(cluster.bootstrap, "statics", "work", "restarts")]
        settle(members, lambda: members[1].assigned == before, "the same partitions again")
        assert members[1].consumer.memberid() != old_member_id
        assert (stays.assigns, stays.revokes) == calls  # the other member saw nothing
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        group = admin.describe_consumer_groups(["statics"])["statics"].result(10)
        assert sorted(m.group_instance_id for m in group.members) == ["restarts", "stays"]
    finally:
        for m in members:
            m.consumer.close()


def test_a_static_group_keeps_its_assignment_when_its_coordinator_fails_over(cluster_factory):
    cluster = cluster_factory(3, {"broker.session.timeout.ms": "1500"})
    create_topic(cluster.bootstrap, "work", 4, 3)
    members = [StaticMember(cluster.bootstrap, "failover", "work", f"instance-{i}") for i in range(2)]
    try:
        share_out(members, 4)
        before = [(m.assigned, m.assigns, m.revokes, m.consumer.memberid()) for m in members]
        partition = partition_for("failover", 10)
        coordinator = cluster.state.topics()[OFFSETS_TOPIC].partitions[partition].leader
        cluster.kill(coordinator)
        wait_until(
            lambda: (
                cluster.state.topics()[OFFSETS_TOPIC].partitions[partition].leader not in (coordinator, -1)
            ),
            15,
            "a new coordinator",
        )
        # Keep the members polling (and heartbeating) for longer than their session timeout:
        # the new coordinator knows them from the stored generation and keeps them.
        deadline = time.monotonic() + 9
        while time.monotonic() < deadline:
            for m in members:
                m.poll()
        assert [(m.assigned, m.assigns, m.revokes, m.consumer.memberid()) for m in members] == before
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        group = admin.describe_consumer_groups(["failover"])["failover"].result(10)
        assert group.coordinator.id != coordinator
        assert sorted(m.member_id for m in group.members) == sorted(b[3] for b in before)
    finally:
        for m in members:
            m.consumer.close()
