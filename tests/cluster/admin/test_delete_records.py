"""DeleteRecords on real brokers with confluent-kafka's AdminClient: the log start moves on
the leader and its followers, consumers no longer see what was deleted, and it lasts."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from kafka.protocol.api_key import ApiKey

from tests.cluster_harness import wait_until
from tests.kafka_helpers import create_topic, delete_records, partition_record, produce_sync, watermarks
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster


def settled_watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    """Watermarks once a leader serves them (after restarts brokers learn leaders in turn)."""

    def ask():
        try:
            return watermarks(bootstrap, topic)
        except KafkaException:
            return None

    return wait_until(ask, 15, f"watermarks of {topic}")


def first_consumed_offsets(bootstrap: str, topic: str, end: int) -> list[int]:
    """Every offset a consumer starting at the earliest offset reads up to ``end``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "delete-records-check",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, -2)])  # OFFSET_BEGINNING
    seen: list[int] = []

    def caught_up() -> bool:
        for message in consumer.consume(1000, 0.2):
            if message.error() is None:
                seen.append(message.offset())
        return bool(seen) and seen[-1] >= end - 1

    try:
        wait_until(caught_up, 20, f"{topic} up to offset {end}")
    finally:
        consumer.close()
    return seen


def raw_delete_records(port: int, topic: str, offset: int, partition: int = 0) -> int:
    """One DeleteRecords v1 sent to one broker, bypassing the client's leader routing."""
    response = raw_request(
        port,
        ApiKey.DeleteRecords,
        1,
        {
            "timeout_ms": 5000,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}],
        },
    )
    return response.topics[0].partitions[0].error_code


def test_deleted_records_are_gone_for_consumers_and_after_a_restart(cluster):
    create_topic(cluster, "trimmed", 1, 1, {"segment.bytes": "4096"}, wait_for_leaders=True)
    produce_sync(cluster.bootstrap, "trimmed", [b"v%d" % i for i in range(300)])
    assert delete_records(cluster.bootstrap, "trimmed", 120).low_watermark == 120
    assert watermarks(cluster.bootstrap, "trimmed") == (120, 300)
    assert first_consumed_offsets(cluster.bootstrap, "trimmed", 300) == list(range(120, 300))
    cluster.stop()
    cluster.start()
    assert settled_watermarks(cluster.bootstrap, "trimmed") == (120, 300)
    assert delete_records(cluster.bootstrap, "trimmed", -1).low_watermark == 300  # -1: the high watermark
    assert watermarks(cluster.bootstrap, "trimmed") == (300, 300)


def test_errors_out_of_range_unknown_partition_and_not_leader(cluster_factory):
    three = cluster_factory(3)
    create_topic(three, "errors", 1, 3, wait_for_leaders=True)
    produce_sync(three.bootstrap, "errors", [b"x"] * 10)
    with pytest.raises(KafkaException) as raised:
        delete_records(three.bootstrap, "errors", 11)
    assert raised.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    leader = partition_record(three, "errors").leader
    follower = next(b for b in three.ports if b != leader)
    assert raw_delete_records(three.ports[follower], "errors", 5) == KafkaError.NOT_LEADER_FOR_PARTITION
    # librdkafka refuses unknown partitions itself, so these go to the broker directly
    assert raw_delete_records(three.ports[leader], "no-such-topic", 5) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert (
        raw_delete_records(three.ports[leader], "errors", 0, partition=5) == KafkaError.UNKNOWN_TOPIC_OR_PART
    )
    assert raw_delete_records(three.ports[leader], "errors", 11) == KafkaError.OFFSET_OUT_OF_RANGE
    assert raw_delete_records(three.ports[leader], "errors", 5) == 0


def test_followers_follow_the_start_and_a_new_leader_keeps_it(cluster_factory):
    three = cluster_factory(3)
    create_topic(three, "replicated", 1, 3, {"segment.bytes": "4096"}, wait_for_leaders=True)
    produce_sync(three.bootstrap, "replicated", [b"r%d" % i for i in range(300)], acks="all")
    assert delete_records(three.bootstrap, "replicated", 150).low_watermark == 150
    old_leader = partition_record(three, "replicated").leader
    three.stop(old_leader)
    wait_until(
        lambda: partition_record(three, "replicated").leader not in (-1, old_leader),
        15,
        "a follower to take over",
    )
    assert settled_watermarks(three.bootstrap, "replicated") == (150, 300)
    three.start(old_leader)
    three.stop()
    three.start()
    wait_until(lambda: partition_record(three, "replicated").leader > 0, 15, "a leader")
    assert settled_watermarks(three.bootstrap, "replicated") == (150, 300)
    assert first_consumed_offsets(three.bootstrap, "replicated", 300) == list(range(150, 300))
