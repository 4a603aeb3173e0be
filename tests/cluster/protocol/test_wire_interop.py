"""Clients we did not write, producing and consuming against a real brokerd."""

from __future__ import annotations

import subprocess

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.kafka_helpers import consume_all, create_topic

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]], **conf) -> list:
    acked = []

    def on_delivery(err, msg):
        assert err is None, err
        acked.append((msg.partition(), msg.offset(), msg.key(), msg.value()))

    producer = Producer(
        {"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5, **conf}
    )
    for key, value in records:
        producer.produce(topic, value, key, on_delivery=on_delivery)
    assert producer.flush(15) == 0
    return acked


def test_confluent_kafka_round_trip_keeps_order_and_key_placement(cluster):
    create_topic(cluster.bootstrap, "orders", 3)
    records = [(f"k{i % 7}".encode(), f"v{i}".encode()) for i in range(3000)]
    acked = produce(cluster.bootstrap, "orders", records, **{"compression.type": "lz4"})
    assert len(acked) == 3000
    consumed = consume_all(cluster.bootstrap, "orders", 3, 3000)
    assert sorted(consumed) == sorted(acked)
    for p in range(3):
        offsets = [o for part, o, _, _ in consumed if part == p]
        assert offsets == sorted(offsets) == list(range(len(offsets)))
        values = [v for part, _, _, v in consumed if part == p]
        assert values == [v for part, _, _, v in sorted(acked) if part == p]
    placement = {}
    for part, _, key, _ in consumed:
        assert placement.setdefault(key, part) == part, f"key {key} moved partitions"


def test_auto_create_on_metadata_and_idempotent_producer(cluster):
    acked = produce(
        cluster.bootstrap,
        "auto-created",
        [(None, b"x%d" % i) for i in range(100)],
        **{"enable.idempotence": True, "acks": "all"},
    )
    assert sorted(o for _, o, _, _ in acked) == list(range(100))


def test_kcat_produce_and_consume_with_gzip_and_lz4(cluster):
    create_topic(cluster.bootstrap, "lines", 1)
    for codec in ("gzip", "lz4"):
        lines = "".join(f"{codec}-{i}\n" for i in range(500))
        subprocess.run(
            ["kcat", "-b", cluster.bootstrap, "-P", "-t", "lines", "-z", codec],
            input=lines.encode(),
            check=True,
            timeout=30,
        )
    out = subprocess.run(
        ["kcat", "-b", cluster.bootstrap, "-C", "-t", "lines", "-e", "-f", "%o %s\n"],
        capture_output=True,
        check=True,
        timeout=30,
    )
    got = out.stdout.decode().splitlines()
    expected = [f"{c}-{i}" for c in ("gzip", "lz4") for i in range(500)]
    assert [line.split(" ", 1)[1] for line in got] == expected
    assert [int(line.split(" ", 1)[0]) for line in got] == list(range(1000))


def test_kcat_metadata_listing(cluster):
    create_topic(cluster.bootstrap, "listed", 2)
    out = subprocess.run(
        ["kcat", "-b", cluster.bootstrap, "-L", "-t", "listed"], capture_output=True, check=True, timeout=30
    ).stdout.decode()
    assert 'topic "listed" with 2 partitions' in out
    assert "partition 1, leader 1, replicas: 1, isrs: 1" in out


def test_kafka_python_producer_and_consumer(cluster):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP

    create_topic(cluster.bootstrap, "kp", 1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    futures = [producer.send("kp", key=b"k", value=b"m%d" % i) for i in range(200)]
    offsets = [f.get(timeout=15).offset for f in futures]
    producer.close()
    assert offsets == list(range(200))
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    consumer.assign([KTP("kp", 0)])
    consumer.seek_to_beginning()
    values = [m.value for m in consumer]
    consumer.close()
    assert values == [b"m%d" % i for i in range(200)]


def test_list_offsets_earliest_latest_and_by_timestamp(cluster):
    create_topic(cluster.bootstrap, "timed", 1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    for i, ts in enumerate([1_000_000, 2_000_000, 3_000_000]):
        producer.produce("timed", b"v%d" % i, timestamp=ts)
        producer.flush(10)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition("timed", 0), 10) == (0, 3)
        found = consumer.offsets_for_times([TopicPartition("timed", 0, 1_500_000)], 10)
        assert found[0].offset == 1
        found = consumer.offsets_for_times([TopicPartition("timed", 0, 9_000_000)], 10)
        assert found[0].offset == -1
    finally:
        consumer.close()


def test_unknown_topic_is_reported_when_auto_create_is_off(cluster_factory):
    cluster = cluster_factory(1, {"auto.create.topics.enable": "false"})
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics("missing", 10)
    assert metadata.topics["missing"].error.code() == 3  # UNKNOWN_TOPIC_OR_PART
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.timeout.ms": 1000})
    errors = []
    producer.produce("missing", b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert len(errors) == 1 and errors[0] is not None
    assert "missing" not in cluster.state.topics()


def test_create_topic_errors(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    create_topic(cluster.bootstrap, "dup", 1)
    cases = {
        "dup": (NewTopic("dup", 1, 1), "TOPIC_ALREADY_EXISTS"),
        "../x": (NewTopic("../x", 1, 1), "TOPIC_EXCEPTION"),
        "rf": (NewTopic("rf", 1, 3), "INVALID_REPLICATION_FACTOR"),
        "cfg": (NewTopic("cfg", 1, 1, config={"retention.ms": "soon"}), "INVALID_CONFIG"),
    }
    for name, (new_topic, error_name) in cases.items():
        future = admin.create_topics([new_topic], operation_timeout=10)[new_topic.topic]
        with pytest.raises(KafkaException) as info:
            future.result(10)
        assert info.value.args[0].name() == error_name, name
    data_dir = cluster.state.broker_dir(1) / "data"
    assert not any(".." in p.name or p.name.startswith("x") for p in data_dir.iterdir())
    assert not (cluster.dir / "x").exists() and not (data_dir.parent / "x-0").exists()
