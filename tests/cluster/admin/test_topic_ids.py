"""Topic ids in Metadata (v10+): a client notices a topic deleted and created again."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster_harness import wait_until

pytestmark = pytest.mark.cluster


def test_a_recreated_topic_is_seen_with_its_new_partition_count_by_a_running_producer(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("again", 3, 1)])["again"].result(10)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "allow.auto.create.topics": False,
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    for i in range(30):
        producer.produce("again", b"old", key=b"%d" % i)
    assert producer.flush(10) == 0
    admin.delete_topics(["again"])["again"].result(10)
    wait_until(lambda: "again" not in admin.list_topics(timeout=5).topics, 10, "the deletion")
    admin.create_topics([NewTopic("again", 1, 1)])["again"].result(10)
    wait_until(
        lambda: len(producer.list_topics("again", timeout=5).topics["again"].partitions) == 1,
        10,
        "the producer to see the new topic",
    )
    delivered = []
    for i in range(30):  # keys that hashed to partitions 1 and 2 of the old topic
        producer.produce(
            "again",
            b"new",
            key=b"%d" % i,
            on_delivery=lambda err, msg: delivered.append((err and err.str(), msg.partition())),
        )
    assert producer.flush(10) == 0, "records stuck on partitions of the deleted topic"
    assert delivered == [(None, 0)] * 30
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ids"})
    consumer.assign([TopicPartition("again", 0, 0)])
    values = []
    wait_until(
        lambda: (
            values.extend(m.value() for m in consumer.consume(100, 0.2) if m.error() is None)
            or len(values) >= 30
        ),
        10,
        "records",
    )
    consumer.close()
    assert values == [b"new"] * 30
