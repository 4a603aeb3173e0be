"""compression.type on a real broker: a topic stores its codec whatever codec a producer
chose, consumers read the same records, and unknown codecs are refused."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from brokerd.storage.record_batch import iter_batch_headers
from tests.cluster_harness import wait_until
from tests.kafka_helpers import create_topic

pytestmark = pytest.mark.cluster

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def stored_codecs(cluster, topic: str) -> list[int]:
    """The codec of every batch in the partition's segment files, as the broker wrote them."""
    codecs = []
    for path in sorted(cluster.dir.rglob(f"{topic}-0/*.log")):
        data = path.read_bytes()
        codecs += [header.compression_type for _, header in iter_batch_headers(data, 0, len(data))]
    return codecs


def consume(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes, bytes, list]]:
    """``(offset, key, value, headers)`` of the first ``count`` records, as librdkafka decodes them."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "compression-check", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = []

    def caught_up() -> bool:
        for m in consumer.consume(1000, 0.2):
            assert m.error() is None, m.error()
            seen.append((m.offset(), m.key(), m.value(), m.headers()))
        return len(seen) >= count

    try:
        wait_until(caught_up, 20, f"{count} records of {topic}")
    finally:
        consumer.close()
    return seen


@pytest.mark.parametrize(
    "topic_codec,producer_codec", [("gzip", "lz4"), ("snappy", "gzip"), ("zstd", "none"), ("lz4", "zstd")]
)
def test_batches_are_stored_in_the_topic_codec_and_read_back_unchanged(cluster, topic_codec, producer_codec):
    create_topic(cluster.bootstrap, "recoded", configs={"compression.type": topic_codec})
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "compression.type": producer_codec,
            "linger.ms": 5,
            "enable.idempotence": True,
        }
    )
    sent = [(b"k%d" % i, b"value %d " % i * 20) for i in range(500)]
    for key, value in sent:
        producer.produce("recoded", value, key, partition=0, headers=[("h", b"%d" % len(value))])
    assert producer.flush(30) == 0
    wait_until(lambda: len(stored_codecs(cluster, "recoded")) > 0, 10, "batches on disk")
    assert set(stored_codecs(cluster, "recoded")) == {CODECS[topic_codec]}
    received = consume(cluster.bootstrap, "recoded", 500)
    assert [(offset, key, value) for offset, key, value, _ in received] == [
        (i, key, value) for i, (key, value) in enumerate(sent)
    ]
    assert all(headers == [("h", b"%d" % len(value))] for _, _, value, headers in received)


def test_unknown_codecs_are_invalid_config(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for value in ("brotli", "LZ4"):
        with pytest.raises(KafkaException) as raised:
            create_topic(admin, f"bad-{value}", configs={"compression.type": value})
        assert raised.value.args[0].code() == KafkaError.INVALID_CONFIG
    for value in ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"):
        create_topic(admin, f"good-{value}", configs={"compression.type": value})
