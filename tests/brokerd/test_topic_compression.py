"""compression.type on a real broker: a gzip topic stores gzip whatever codec a producer
chose, consumers read the same records, and codecs this broker cannot write are refused."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.storage import iter_batch_headers
from brokerd.storage.recompression import codec_available
from tests.cluster_harness import wait_until

GZIP, LZ4 = 1, 3


def stored_codecs(cluster, topic: str) -> list[int]:
    """The codec of every batch in the partition's segment files, as the broker wrote them."""
    codecs = []
    for path in sorted(cluster.dir.rglob(f"{topic}-0/*.log")):
        data = path.read_bytes()
        codecs += [header.compression_type for _, header in iter_batch_headers(data, 0, len(data))]
    return codecs


def consume(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes, bytes, list]]:
    """``(offset, key, value, headers)`` of the first ``count`` records, as librdkafka decodes them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compression-check",
                         "enable.auto.commit": False})
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


def create(admin: AdminClient, name: str, configs: dict[str, str]) -> None:
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(10)


def test_lz4_batches_are_stored_gzip_and_read_back_unchanged(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    create(admin, "gzipped", {"compression.type": "gzip"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": "lz4",
                         "linger.ms": 5, "enable.idempotence": True})
    sent = [(b"k%d" % i, b"value %d " % i * 20) for i in range(500)]
    for key, value in sent:
        producer.produce("gzipped", value, key, partition=0, headers=[("h", b"%d" % len(value))])
    assert producer.flush(30) == 0
    wait_until(lambda: len(stored_codecs(cluster, "gzipped")) > 0, 10, "batches on disk")
    assert set(stored_codecs(cluster, "gzipped")) == {GZIP}
    received = consume(cluster.bootstrap, "gzipped", 500)
    assert [(offset, key, value) for offset, key, value, _ in received] == [
        (i, key, value) for i, (key, value) in enumerate(sent)]
    assert all(headers == [("h", b"%d" % len(value))] for _, _, value, headers in received)


def test_unknown_or_unavailable_codecs_are_invalid_config(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    refused = ["brotli"] + [name for name in ("snappy", "zstd") if not codec_available(name)]
    for value in refused:
        with pytest.raises(KafkaException) as raised:
            create(admin, f"bad-{value}", {"compression.type": value})
        assert raised.value.args[0].code() == KafkaError.INVALID_CONFIG
    for value in ("producer", "uncompressed", "gzip", "lz4"):
        create(admin, f"good-{value}", {"compression.type": value})
