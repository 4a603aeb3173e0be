"""Committed offsets that outlive their use go, as in Kafka: the retention rules of KIP-211
(offsets.retention.minutes) as a pure function, and on real brokers the offsets of a deleted
topic and empty groups without offsets, removed by the coordinator's periodic pass."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.coordinator.classic_group import ClassicGroup, GroupState, Member
from brokerd.coordinator.offset_retention import expired_offsets
from brokerd.coordinator.offsets_topic import CommittedOffset
from tests.cluster_harness import running_cluster, wait_until

MINUTE_MS = 60_000
NOW_MS = 100 * MINUTE_MS
RETENTION_MS = 10 * MINUTE_MS


def committed_ago(minutes: int) -> CommittedOffset:
    return CommittedOffset(5, commit_timestamp=NOW_MS - minutes * MINUTE_MS)


def consumer_group(state: GroupState, since_minutes: int, subscribed: str | None = None) -> ClassicGroup:
    group = ClassicGroup(
        "g",
        state=state,
        protocol_type="consumer",
        protocol_name="range",
        state_timestamp_ms=NOW_MS - since_minutes * MINUTE_MS,
    )
    if subscribed is not None:
        # ConsumerProtocolSubscription v0: version, topics [string], user data (null)
        metadata = (
            b"\x00\x00"
            + b"\x00\x00\x00\x01"
            + len(subscribed).to_bytes(2, "big")
            + subscribed.encode()
            + b"\xff\xff\xff\xff"
        )
        group.members["m"] = Member(
            "m", None, "c", "/127.0.0.1", 10_000, 10_000, "consumer", [("range", metadata)]
        )
    return group


def expired(group, offsets, pending=frozenset()):
    return expired_offsets(group, offsets, set(pending), NOW_MS, RETENTION_MS)


@pytest.mark.unit
def test_offsets_without_a_group_expire_counted_from_their_commit():
    offsets = {("old", 0): committed_ago(10), ("new", 0): committed_ago(9)}
    assert expired(None, offsets) == [("old", 0)]
    assert expired(None, offsets, pending={("old", 0)}) == []  # an open transaction commits it


@pytest.mark.unit
def test_an_empty_group_keeps_every_offset_until_it_has_been_empty_that_long():
    offsets = {("a", 0): committed_ago(60), ("b", 0): committed_ago(1)}
    assert expired(consumer_group(GroupState.EMPTY, since_minutes=9), offsets) == []
    assert expired(consumer_group(GroupState.EMPTY, since_minutes=10), offsets) == [("a", 0), ("b", 0)]


@pytest.mark.unit
def test_a_stable_consumer_group_loses_only_old_offsets_of_topics_nobody_subscribes_to():
    offsets = {
        ("read", 0): committed_ago(60),
        ("dropped", 0): committed_ago(60),
        ("dropped", 1): committed_ago(2),
    }
    group = consumer_group(GroupState.STABLE, since_minutes=60, subscribed="read")
    assert expired(group, offsets) == [("dropped", 0)]


@pytest.mark.unit
@pytest.mark.parametrize("state", [GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE])
def test_a_rebalancing_group_keeps_everything(state):
    assert expired(consumer_group(state, since_minutes=60), {("a", 0): committed_ago(60)}) == []


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(
        tmp_path_factory.mktemp("offset-retention"), 1, {"offsets.retention.check.interval.ms": "200"}
    ) as cluster:
        yield cluster


def groups(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return {listing.group_id for listing in admin.list_consumer_groups().result(10).valid}


def commit(bootstrap: str, group: str, offsets: list[TopicPartition]) -> None:
    """Commit as an admin tool does, with no member in the group."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, offsets)
    admin.alter_consumer_group_offsets([request])[group].result(10)


def committed(bootstrap: str, group: str, partitions: list[TopicPartition]) -> dict[str, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {tp.topic: tp.offset for tp in consumer.committed(partitions, 10)}
    finally:
        consumer.close()


@pytest.mark.cluster
def test_a_deleted_topic_takes_its_offsets_and_a_recreated_one_starts_without(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic("gone", 1, 1), NewTopic("kept", 1, 1)]).values():
        future.result(10)
    commit(cluster.bootstrap, "reader", [TopicPartition("gone", 0, 7), TopicPartition("kept", 0, 3)])
    asked = [TopicPartition("gone", 0), TopicPartition("kept", 0)]
    assert committed(cluster.bootstrap, "reader", asked) == {"gone": 7, "kept": 3}

    admin.delete_topics(["gone"])["gone"].result(10)
    admin.create_topics([NewTopic("gone", 1, 1)])["gone"].result(10)
    assert committed(cluster.bootstrap, "reader", asked) == {"gone": -1001, "kept": 3}


@pytest.mark.cluster
def test_an_empty_group_without_offsets_is_removed(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # alive until the result
    admin.create_topics([NewTopic("joined", 1, 1)])["joined"].result(10)
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "passer-by", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe(["joined"])
        wait_until(lambda: consumer.poll(0.2) is None and consumer.assignment(), 20, "an assignment")
        assert "passer-by" in groups(cluster.bootstrap)
    finally:
        consumer.close()  # leaves the group empty, with nothing committed
    wait_until(
        lambda: "passer-by" not in groups(cluster.bootstrap), 10, "the coordinator to remove the empty group"
    )
