"""OffsetCommit at the wire level, with members driven request by request on a real broker:
when a commit is accepted during a rebalance, and what an unknown topic gets."""

from __future__ import annotations

import asyncio

import pytest
from kafka.protocol.api_key import ApiKey

from brokerd.replication.broker_client import BrokerClient
from tests.cluster_harness import until_answered

pytestmark = pytest.mark.cluster

GROUP = "billing"
TIMEOUT_S = 15.0
REBALANCE_IN_PROGRESS = 27
UNKNOWN_TOPIC_OR_PARTITION = 3
MEMBER_ID_REQUIRED = 79


def _join(member_id: str = "") -> dict:
    return {
        "group_id": GROUP,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }


def _commit(member_id: str, generation: int, topics: dict[str, int]) -> dict:
    return {
        "group_id": GROUP,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "group_instance_id": None,
        "topics": [
            {
                "name": name,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
            for name, offset in topics.items()
        ],
    }


def _codes(response) -> dict[str, int]:
    return {t.name: t.partitions[0].error_code for t in response.topics}


async def _member_id(client: BrokerClient) -> str:
    """JoinGroup v4+ first hands a new member its id (KIP-394)."""
    joined = await client.request(ApiKey.JoinGroup, 5, _join())
    assert joined.error_code == MEMBER_ID_REQUIRED
    return joined.member_id


async def _stable_member(client: BrokerClient) -> tuple[str, int]:
    """Join as the only member and finish the rebalance: (member id, generation)."""
    await until_answered(
        lambda: client.request(ApiKey.FindCoordinator, 1, {"key": GROUP, "key_type": 0}),
        lambda r: r.error_code == 0,
        "the group coordinator",
    )
    joined = await client.request(
        ApiKey.JoinGroup, 5, _join(await _member_id(client)), extra_timeout_s=TIMEOUT_S
    )
    assert joined.error_code == 0
    synced = await client.request(
        ApiKey.SyncGroup,
        3,
        {
            "group_id": GROUP,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "group_instance_id": None,
            "assignments": [{"member_id": joined.member_id, "assignment": b""}],
        },
    )
    assert synced.error_code == 0
    return joined.member_id, joined.generation_id


async def _group_state(client: BrokerClient) -> str:
    described = await client.request(
        ApiKey.DescribeGroups, 4, {"groups": [GROUP], "include_authorized_operations": False}
    )
    return described.groups[0].group_state


def test_members_commit_while_the_group_prepares_a_rebalance_and_unknown_topics_are_named(cluster):
    port = cluster.ports[1]

    async def scenario():
        first, second, admin = (
            BrokerClient("127.0.0.1", port, name, TIMEOUT_S) for name in ("first", "second", "admin")
        )
        try:
            await admin.request(
                ApiKey.CreateTopics,
                4,
                {
                    "topics": [
                        {
                            "name": "orders",
                            "num_partitions": 1,
                            "replication_factor": 1,
                            "assignments": [],
                            "configs": [],
                        }
                    ],
                    "timeout_ms": 5000,
                    "validate_only": False,
                },
            )
            member, generation = await _stable_member(first)
            # A second member joins: the group waits in PreparingRebalance for the first to rejoin.
            second_id = await _member_id(second)
            joining = asyncio.create_task(
                second.request(ApiKey.JoinGroup, 5, _join(second_id), extra_timeout_s=TIMEOUT_S)
            )
            await until_answered(
                lambda: _group_state(admin), lambda s: s == "PreparingRebalance", "the rebalance to start"
            )
            committed = await first.request(
                ApiKey.OffsetCommit, 7, _commit(member, generation, {"orders": 42, "no-such-topic": 7})
            )
            assert _codes(committed) == {"orders": 0, "no-such-topic": UNKNOWN_TOPIC_OR_PARTITION}
            fetched = await admin.request(
                ApiKey.OffsetFetch,
                5,
                {
                    "group_id": GROUP,
                    "require_stable": False,
                    "topics": [{"name": "orders", "partition_indexes": [0]}],
                },
            )
            assert fetched.topics[0].partitions[0].committed_offset == 42
            # The first member rejoins; until the leader's SyncGroup the group is
            # CompletingRebalance, and only then are commits refused.
            rejoined = await first.request(ApiKey.JoinGroup, 5, _join(member), extra_timeout_s=TIMEOUT_S)
            await joining
            assert await _group_state(admin) == "CompletingRebalance"
            refused = await first.request(
                ApiKey.OffsetCommit, 7, _commit(member, rejoined.generation_id, {"orders": 43})
            )
            assert _codes(refused) == {"orders": REBALANCE_IN_PROGRESS}
        finally:
            for client in (first, second, admin):
                client.close()

    asyncio.run(scenario())
