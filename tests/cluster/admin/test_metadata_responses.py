"""What a broker's Metadata answer says after the cluster changes: brokers reuse each topic's
part of the answer until the metadata changes it, so every change must show at once in the
next answer of the same broker. Real brokers, raw Metadata v12 requests to one broker."""

from __future__ import annotations

import signal

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.cluster_harness import wait_until
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster

METADATA = 3
ALL_TOPICS = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_topic_authorized_operations": False,
}


def topic_metadata(port: int, name: str):
    response = raw_request(port, METADATA, 12, ALL_TOPICS)
    return next((t for t in response.topics if t.name == name), None)


def controller_id(port: int) -> int:
    return raw_request(port, METADATA, 12, ALL_TOPICS).controller_id


def test_every_change_shows_in_the_next_answer(cluster_factory):
    cluster = cluster_factory(3, {"broker.session.timeout.ms": "1500"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("moving", 2, 3)])["moving"].result(10)
    asked = cluster.ports[1]
    first = wait_until(
        lambda: (t := topic_metadata(asked, "moving")) and all(p.leader_id > 0 for p in t.partitions) and t,
        10,
        "leaders in the answer",
    )
    victim = next(p.leader_id for p in first.partitions if p.leader_id != 1)
    moved = [p.partition_index for p in first.partitions if p.leader_id == victim]

    cluster.signal(victim, signal.SIGKILL)
    after_kill = wait_until(
        lambda: (
            (t := topic_metadata(asked, "moving"))
            and all(p.leader_id not in (victim, -1) for p in t.partitions)
            and controller_id(asked) not in (victim, -1)
            and t
        ),
        15,
        "new leaders and a live controller answered",
    )
    for p in after_kill.partitions:
        assert victim in p.offline_replicas and victim not in p.isr_nodes
        if p.partition_index in moved:
            assert p.leader_epoch > first.partitions[p.partition_index].leader_epoch

    # A client that learned the controller before the kill sends admin requests to that broker
    # until its own metadata refresh; a new one starts from the answer checked above.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with pytest.raises(KafkaException) as refused:  # 3 replicas, 2 live brokers
        admin.create_partitions([NewPartitions("moving", 3)])["moving"].result(10)
    assert refused.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
    cluster.start(victim)
    admin.create_partitions([NewPartitions("moving", 3)])["moving"].result(10)
    wait_until(lambda: len(topic_metadata(asked, "moving").partitions) == 3, 10, "the new partition answered")

    admin.delete_topics(["moving"])["moving"].result(10)
    wait_until(lambda: topic_metadata(asked, "moving") is None, 10, "the deleted topic gone")
    admin.create_topics([NewTopic("moving", 1, 2)])["moving"].result(10)
    again = wait_until(lambda: topic_metadata(asked, "moving"), 10, "the topic created again")
    assert again.topic_id != first.topic_id and len(again.partitions) == 1
