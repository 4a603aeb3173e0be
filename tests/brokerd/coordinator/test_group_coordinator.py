"""The group coordinator as the handlers see it, in-process against fakes of the broker's
ports: one group id is one group, of one type, whichever protocol asks for it, and ListGroups
lists every type from the one map."""

from __future__ import annotations

import asyncio

import pytest
from kafka.errors import GroupIdNotFoundError, InconsistentGroupProtocolError, MemberIdRequiredError

from brokerd.coordinator.classic_group import Member
from brokerd.coordinator.consumer_group.heartbeat import Heartbeat
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC, CommittedOffset
from tests.brokerd.coordinator.fakes import FakeMetadata, FakeReplicas, group_coordinator, hosted

pytestmark = pytest.mark.unit


def coordinator():
    replicas, metadata = FakeReplicas(), FakeMetadata()
    hosted(replicas, metadata, OFFSETS_TOPIC, 3)
    hosted(replicas, metadata, "orders", 2)
    groups = group_coordinator(replicas, metadata, 3, 60_000).coordinator
    groups.on_metadata_change()
    return groups


def classic_member() -> Member:
    return Member("", None, "c", "h", 10_000, 10_000, "consumer", [("range", b"")])


def consumer_join(group_id: str) -> Heartbeat:
    return Heartbeat(
        group_id, "m", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["orders"], owned={}
    )


def share_join(groups, group_id: str):
    return groups.share_group_heartbeat(group_id, "", 0, None, ["orders"], "c", "h")


def test_a_group_id_holds_one_group_whichever_protocol_asks() -> None:
    async def scenario() -> None:
        groups = coordinator()
        await groups.consumer_group_heartbeat(consumer_join("consumer"))
        share_join(groups, "share")
        required = await groups.join("classic", classic_member(), requires_known_member_id=True)
        assert required["error_code"] == MemberIdRequiredError.errno and required["member_id"]

        for taken in ("consumer", "share"):
            with pytest.raises(InconsistentGroupProtocolError):
                await groups.join(taken, classic_member(), requires_known_member_id=True)
        with pytest.raises(GroupIdNotFoundError, match="not a consumer group"):
            await groups.consumer_group_heartbeat(consumer_join("share"))
        for taken in ("consumer", "classic"):
            with pytest.raises(GroupIdNotFoundError, match="not a share group"):
                share_join(groups, taken)

    asyncio.run(scenario())


def test_list_groups_lists_every_type_from_one_map() -> None:
    async def scenario() -> None:
        groups = coordinator()
        await groups.consumer_group_heartbeat(consumer_join("consumer"))
        share_join(groups, "share")
        await groups.commit("offsets-only", -1, "", None, {("orders", 0): CommittedOffset(5)})
        await groups.join("classic", classic_member(), requires_known_member_id=True)
        listed = {row[0]: row[1:] for row in groups.list_groups()}
        assert listed["consumer"] == ("consumer", "Stable", "consumer")
        assert listed["share"] == ("share", "Stable", "share")
        assert listed["classic"] == ("", "Empty", "classic")
        assert listed["offsets-only"] == ("", "Empty", "classic")

    asyncio.run(scenario())
