"""Log compaction on a real broker: 100k updates over 1k keys become the 1k latest values."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster_harness import wait_until

pytestmark = pytest.mark.cluster

UPDATES, KEYS = 100_000, 1_000
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": str(256 * 1024),
    "segment.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01",
}


def consume_from_start(bootstrap: str, topic: str) -> list[tuple[bytes, bytes, int]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "compaction-check", "enable.auto.commit": False}
    )
    end = consumer.get_watermark_offsets(TopicPartition(topic, 0), 10)[1]
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[tuple[bytes, bytes, int]] = []

    def caught_up() -> bool:
        for m in consumer.consume(10_000, 0.2):
            if m.error() is None:
                seen.append((m.key(), m.value(), m.offset()))
        return bool(seen) and seen[-1][2] >= end - 1

    wait_until(caught_up, 30, "the end of the partition")
    consumer.close()
    return seen


def test_updates_compact_to_the_latest_value_of_every_key(cluster_factory):
    cluster = cluster_factory(1, {"log.cleaner.backoff.ms": "200", "log.retention.check.interval.ms": "200"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("latest", 1, 1, config=COMPACTED)])["latest"].result(10)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20})
    for i in range(UPDATES):
        producer.produce("latest", value=b"%d" % i, key=b"k%d" % (i % KEYS))
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    during = consume_from_start(cluster.bootstrap, "latest")  # racing the cleaner on purpose
    wait_until(
        lambda: len(consume_from_start(cluster.bootstrap, "latest")) == KEYS,
        60,
        "the log to compact to one record per key",
    )
    final = consume_from_start(cluster.bootstrap, "latest")
    assert {k: v for k, v, _ in final} == {b"k%d" % k: b"%d" % (UPDATES - KEYS + k) for k in range(KEYS)}
    for seen in (during, final):  # never a key's older value after its newer one
        last: dict[bytes, int] = {}
        for key, value, _ in seen:
            assert int(value) > last.get(key, -1), f"{key!r} went back to an older value"
            last[key] = int(value)
