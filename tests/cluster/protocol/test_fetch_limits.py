"""Fetch size limits over many partitions: max_bytes caps the whole response, only its very first
batch may be larger, partition_max_bytes caps each partition, and long polls still wait for data."""

from __future__ import annotations

import struct
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.brokerd.storage.conftest import records
from tests.cluster_harness import running_cluster, wait_until
from tests.kafka_helpers import RawClient, create_topic

pytestmark = [pytest.mark.cluster, pytest.mark.interop]

TOPIC = "wide"
PARTITIONS = 12
PER_PARTITION = 60
VALUE_SIZE = 10_000
BATCH_BYTES = 200_000


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """One broker with PARTITIONS partitions of ~600 kB each, in batches of ~200 kB."""
    with running_cluster(tmp_path_factory.mktemp("fetch-limits"), 1) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "linger.ms": 200,
                "batch.size": BATCH_BYTES,
                "compression.type": "none",
            }
        )
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.produce(TOPIC, value=f"{p}-{i}-".encode().ljust(VALUE_SIZE, b"x"), partition=p)
        assert producer.flush(30) == 0
        yield cluster


@pytest.fixture
def raw(loaded):
    client = RawClient(loaded.ports[1])
    yield client
    client.close()


def fetch(
    raw: RawClient,
    offsets: dict[int, int],
    max_bytes: int,
    partition_max_bytes: int,
    max_wait_ms: int = 0,
    topic: str = TOPIC,
) -> tuple[int, dict[int, bytes]]:
    """One Fetch through ``raw``; returns the response's size in bytes and each partition's records."""
    size, partitions = raw.fetch_partitions(offsets, max_bytes, partition_max_bytes, max_wait_ms, topic=topic)
    return size, {index: bytes(p.records or b"") for index, p in partitions.items()}


def batch_sizes(data: bytes) -> list[int]:
    sizes, position = [], 0
    while position + 12 <= len(data):
        size = struct.unpack_from(">i", data, position + 8)[0] + 12
        sizes.append(size)
        position += size
    return sizes


def test_consuming_everything_never_gets_a_response_above_max_bytes(raw):
    max_bytes = 500_000
    offsets = {p: 0 for p in range(PARTITIONS)}
    seen = {p: [] for p in range(PARTITIONS)}
    while any(offset < PER_PARTITION for offset in offsets.values()):
        size, found = fetch(raw, offsets, max_bytes, 1 << 20)
        assert sum(len(data) for data in found.values()) <= max_bytes
        assert size <= max_bytes + 100 * PARTITIONS  # per-partition fields around the records
        for p, data in found.items():
            fetched = [(offset, value) for offset, _, value in records(data) if offset >= offsets[p]]
            seen[p] += fetched
            if fetched:
                offsets[p] = fetched[-1][0] + 1
    for p, got in seen.items():
        assert [offset for offset, _ in got] == list(range(PER_PARTITION))
        assert [value[:8] for _, value in got] == [
            f"{p}-{i}-".encode().ljust(8, b"x")[:8] for i in range(PER_PARTITION)
        ]


def test_only_the_first_batch_of_the_response_may_exceed_max_bytes(raw):
    size, found = fetch(raw, {p: 0 for p in range(PARTITIONS)}, 1000, 1 << 20)
    assert [len(batch_sizes(data)) for data in found.values()] == [1] + [0] * (PARTITIONS - 1)
    assert len(found[0]) > 1000 and size < len(found[0]) + 100 * PARTITIONS


def test_a_batch_that_does_not_fit_the_rest_of_the_budget_is_left_for_the_next_fetch(raw):
    # the first partition fills most of the budget; no later partition may add a whole batch
    first = fetch(raw, {0: 0}, 1 << 30, 1 << 30)[1][0]
    two_batches = sum(batch_sizes(first)[:2])
    size, found = fetch(raw, {p: 0 for p in range(PARTITIONS)}, two_batches + 1000, 1 << 20)
    assert len(found[0]) == two_batches
    assert all(not data for p, data in found.items() if p != 0)


def test_partition_max_bytes_caps_each_partition(raw):
    first_batch = batch_sizes(fetch(raw, {0: 0}, 1 << 30, 1 << 30)[1][0])[0]
    size, found = fetch(raw, {p: 0 for p in range(PARTITIONS)}, 1 << 30, first_batch + 10)
    assert [len(batch_sizes(data)) for data in found.values()] == [1] * PARTITIONS
    size, found = fetch(raw, {p: 0 for p in range(PARTITIONS)}, 1 << 30, first_batch - 10)
    assert [len(batch_sizes(data)) for data in found.values()] == [1] + [0] * (PARTITIONS - 1)


def test_a_long_poll_waits_for_data_and_returns_by_max_wait(loaded, raw):
    create_topic(loaded.bootstrap, "late", 3)
    empty = {p: 0 for p in range(3)}
    started = time.monotonic()
    _, found = fetch(raw, empty, 1 << 20, 1 << 20, max_wait_ms=300, topic="late")
    assert not any(found.values()) and 0.25 <= time.monotonic() - started < 3

    def produce_later():
        time.sleep(0.3)
        producer = Producer({"bootstrap.servers": loaded.bootstrap})
        producer.produce("late", b"late", partition=2)
        producer.flush(10)

    thread = threading.Thread(target=produce_later)
    thread.start()
    started = time.monotonic()
    _, found = fetch(raw, empty, 1 << 20, 1 << 20, max_wait_ms=10_000, topic="late")
    thread.join()
    assert time.monotonic() - started < 5
    assert [value for _, _, value in records(found[2])] == [b"late"]


def test_librdkafka_with_a_1mb_fetch_limit_consumes_every_partition_in_order(loaded):
    fetch_max = 1 << 20
    consumer = Consumer(
        {
            "bootstrap.servers": loaded.bootstrap,
            "group.id": "fetch-limits",
            "enable.auto.commit": False,
            "fetch.max.bytes": fetch_max,
            # librdkafka's floor; a bigger response makes it drop the connection
            "receive.message.max.bytes": fetch_max + 512,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    seen = {p: [] for p in range(PARTITIONS)}
    try:

        def caught_up():
            for msg in consumer.consume(500, 0.2):
                assert msg.error() is None, msg.error()
                seen[msg.partition()].append(msg.offset())
            return all(len(offsets) >= PER_PARTITION for offsets in seen.values())

        wait_until(caught_up, 30, "every record through librdkafka")
    finally:
        consumer.close()
    assert all(offsets == list(range(PER_PARTITION)) for offsets in seen.values())
