"""OffsetDelete and DescribeGroups as admin clients use them on a group with live members."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as Partition
from kafka.errors import GroupSubscribedToTopicError, NoError

from tests.cluster_harness import wait_until

pytestmark = pytest.mark.cluster


def test_a_live_consumer_group_keeps_the_offsets_of_topics_it_subscribes_to(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic("read", 1, 1), NewTopic("old", 1, 1)]).values():
        future.result(10)
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "g", "enable.auto.commit": False}
    )
    offsets_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        consumer.subscribe(["read"])
        wait_until(lambda: consumer.poll(0.2) is None and consumer.assignment(), 20, "an assignment")
        consumer.commit(
            offsets=[TopicPartition("read", 0, 7), TopicPartition("old", 0, 3)], asynchronous=False
        )
        errors = offsets_admin.delete_group_offsets("g", [Partition("read", 0), Partition("old", 0)])
        assert errors == {Partition("read", 0): GroupSubscribedToTopicError, Partition("old", 0): NoError}
        asked = [TopicPartition("read", 0), TopicPartition("old", 0)]
        committed = {tp.topic: tp.offset for tp in consumer.committed(asked, 10)}
        assert committed == {"read": 7, "old": -1001}  # -1001: no committed offset

        described = admin.describe_consumer_groups(["g"], include_authorized_operations=True)["g"].result(10)
        assert set(described.authorized_operations) == {
            AclOperation.READ,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
        }
    finally:
        consumer.close()
    try:  # the group is empty now: nothing holds the offsets of its topics
        assert offsets_admin.delete_group_offsets("g", [Partition("read", 0)]) == {
            Partition("read", 0): NoError
        }
    finally:
        offsets_admin.close()
