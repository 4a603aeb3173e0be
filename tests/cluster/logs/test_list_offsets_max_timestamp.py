"""ListOffsets v7 MAX_TIMESTAMP (KIP-734) through confluent-kafka's AdminClient.list_offsets."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from tests.cluster_harness import wait_until

pytestmark = pytest.mark.cluster


def list_offset(admin: AdminClient, topic: str, spec: OffsetSpec):
    futures = admin.list_offsets({TopicPartition(topic, 0): spec}, request_timeout=10)
    return next(iter(futures.values())).result(10)


def test_max_timestamp_finds_the_newest_record_not_the_last_one(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("stamped", 1, 1, config={"segment.bytes": "4096"})])["stamped"].result(10)
    stamps = [1_700_000_000_000 + (i * 7919) % 1000 for i in range(400)]  # out of order
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for i, stamp in enumerate(stamps):
        producer.produce("stamped", b"v%d" % i, partition=0, timestamp=stamp)
    assert producer.flush(30) == 0
    wait_until(
        lambda: list_offset(admin, "stamped", OffsetSpec.latest()).offset == 400, 10, "the high watermark"
    )
    newest = list_offset(admin, "stamped", OffsetSpec.max_timestamp())
    assert (newest.offset, newest.timestamp) == (stamps.index(max(stamps)), max(stamps))
    assert list_offset(admin, "stamped", OffsetSpec.earliest()).offset == 0


def test_max_timestamp_of_an_empty_partition_is_unknown(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("empty", 1, 1)])["empty"].result(10)
    assert list_offset(admin, "empty", OffsetSpec.max_timestamp()).offset == -1
