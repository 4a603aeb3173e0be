"""read_committed end to end: transactional producers, consumers at both isolation levels, kcat.

Real brokers, real librdkafka transactional producers (committing some transactions, aborting
others, interleaved with a second transactional producer and a plain one); consumers must never
see an aborted record, must see every committed one in order, and must not read past an open
transaction (the last stable offset).
"""

from __future__ import annotations

import subprocess

import pytest
from confluent_kafka import Consumer, IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.brokerd.storage.conftest import records
from tests.cluster_harness import wait_until
from tests.kafka_helpers import RawClient, create_topic, partition_record, transactional_producer

pytestmark = [pytest.mark.cluster, pytest.mark.interop]

PARTITIONS = 3
END = b"end"


def write_transactions(bootstrap: str, topic: str, rounds: int) -> dict[str, bool]:
    """Two transactional producers and a plain one write to every partition, interleaved;
    returns, for each transaction's label, whether it was committed."""
    t1, t2 = transactional_producer(bootstrap, "t1"), transactional_producer(bootstrap, "t2")
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    outcome = {}
    for n in range(rounds):
        for producer in (t1, t2):
            producer.begin_transaction()
        for i in range(4):
            for name, producer in (("t1", t1), ("t2", t2), ("plain", plain)):
                for p in range(PARTITIONS):
                    producer.produce(topic, f"{name}/{n}/{p}/{i}".encode(), partition=p)
            t1.flush(10)
            t2.flush(10)
        outcome[f"t1/{n}"] = n % 3 != 1
        outcome[f"t2/{n}"] = n % 2 == 1
        for name, producer in (("t1", t1), ("t2", t2)):
            if outcome[f"{name}/{n}"]:
                producer.commit_transaction(15)
            else:
                producer.abort_transaction(15)
    for p in range(PARTITIONS):
        plain.produce(topic, END, partition=p)
    assert plain.flush(15) == 0
    return outcome


def consume(
    bootstrap: str, topic: str, partitions: int, isolation: str, done
) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of every record delivered on each partition, until ``done(delivered)``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rc-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "fetch.wait.max.ms": 50,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:

        def delivered():
            for msg in consumer.consume(500, 0.2):
                assert msg.error() is None, msg.error()
                got[msg.partition()].append((msg.offset(), msg.value()))
            return done(got)

        wait_until(delivered, 30, f"records of {topic} at {isolation}")
    finally:
        consumer.close()
    return got


def consume_to_end(bootstrap: str, topic: str, isolation: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every partition up to the END record."""
    return consume(
        bootstrap,
        topic,
        PARTITIONS,
        isolation,
        lambda got: all(records and records[-1][1] == END for records in got.values()),
    )


def kcat_read_committed(bootstrap: str, topic: str, partition: int) -> list[tuple[int, bytes]]:
    out = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-p",
            str(partition),
            "-o",
            "beginning",
            "-e",
            "-q",
            "-X",
            "isolation.level=read_committed",
            "-f",
            "%o %s\\n",
        ],
        capture_output=True,
        timeout=30,
        check=True,
    ).stdout
    return [(int(offset), value) for offset, value in (line.split(b" ", 1) for line in out.splitlines())]


def committed(outcome: dict[str, bool], value: bytes) -> bool:
    name, n, _ = value.decode().split("/", 2)
    return name == "plain" or outcome[f"{name}/{n}"]


def test_read_committed_sees_every_committed_record_in_order_and_no_aborted_one(cluster):
    topic = "txns"
    create_topic(cluster.bootstrap, topic, PARTITIONS)
    outcome = write_transactions(cluster.bootstrap, topic, rounds=6)
    assert sorted(outcome.values()) == [False] * 5 + [True] * 7
    everything = consume_to_end(cluster.bootstrap, topic, "read_uncommitted")
    read_committed = consume_to_end(cluster.bootstrap, topic, "read_committed")
    for p in range(PARTITIONS):
        data = [(offset, value) for offset, value in everything[p] if value != END]
        assert len(data) == 6 * 4 * 3  # 6 rounds of 4 records from each of 3 producers
        expected = [(offset, value) for offset, value in data if committed(outcome, value)]
        assert read_committed[p][:-1] == expected
        assert kcat_read_committed(cluster.bootstrap, topic, p) == read_committed[p]


def latest_offsets(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """ListOffsets latest at (read_uncommitted, read_committed), through librdkafka's admin API."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, partition)
    return tuple(
        admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)[tp].result(10).offset
        for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED)
    )


def latest_offsets_once_led(bootstrap: str, topic: str) -> tuple[int, int] | None:
    """latest_offsets, or None while clients cannot find the new leader yet."""
    try:
        return latest_offsets(bootstrap, topic, 0)
    except KafkaException:
        return None


def published_status(cluster, broker_id: int, topic: str, high_watermark: int) -> dict | None:
    """Partition 0's status in state/replicas/<broker>.json once it shows ``high_watermark``."""
    status = cluster.state.replica_status().get(broker_id, {}).get((topic, 0))
    return status if status and status["high_watermark"] == high_watermark else None


def test_an_open_transaction_holds_the_last_stable_offset_until_it_commits(cluster):
    topic = "held"
    create_topic(cluster.bootstrap, topic, 1)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    for value in (b"before-0", b"before-1"):
        plain.produce(topic, value, partition=0)
    plain.flush(10)
    txn = transactional_producer(cluster.bootstrap, "holder")
    txn.begin_transaction()
    for i in range(3):
        txn.produce(topic, f"open-{i}".encode(), partition=0)
    assert txn.flush(10) == 0
    for value in (b"after-0", b"after-1"):
        plain.produce(topic, value, partition=0)
    plain.flush(10)

    assert latest_offsets(cluster.bootstrap, topic, 0) == (7, 2)
    raw = RawClient(cluster.ports[1])
    try:
        _, partitions = raw.fetch_partitions({0: 0}, 1 << 20, 1 << 20, topic=topic, isolation_level=1)
    finally:
        raw.close()
    [response] = partitions.values()
    assert (response.high_watermark, response.last_stable_offset) == (7, 2)
    assert [offset for offset, _, _ in records(response.records)] == [0, 1]
    status = wait_until(lambda: published_status(cluster, 1, topic, high_watermark=7), 5, "the status")
    assert status["last_stable_offset"] == 2
    assert [t["first_offset"] for t in status["open_transactions"]] == [2]

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "held",
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 50,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = []
    try:

        def received(count):
            seen.extend(msg.value() for msg in consumer.consume(10, 0.1) if msg.error() is None)
            return len(seen) >= count

        wait_until(lambda: received(2), 15, "the records before the transaction")
        for _ in range(10):  # a second of fetching: the open transaction holds everything after it
            assert not received(3)
        txn.commit_transaction(15)
        wait_until(lambda: received(7), 15, "the records after the commit")
    finally:
        consumer.close()
    assert seen == [b"before-0", b"before-1", b"open-0", b"open-1", b"open-2", b"after-0", b"after-1"]
    assert latest_offsets(cluster.bootstrap, topic, 0) == (8, 8)


def test_a_new_leader_knows_the_open_transaction_and_holds_the_same_last_stable_offset(cluster_factory):
    three = cluster_factory(3)
    topic = "failover"
    create_topic(three, topic, 1, 3, {"min.insync.replicas": "2"}, wait_for_leaders=True)
    leader = partition_record(three, topic).leader
    plain = Producer({"bootstrap.servers": three.bootstrap, "acks": "all"})
    txn = transactional_producer(three.bootstrap, "survivor")
    plain.produce(topic, b"before", partition=0)
    plain.flush(10)
    txn.begin_transaction()
    for i in range(3):
        txn.produce(topic, f"open-{i}".encode(), partition=0)
    assert txn.flush(10) == 0
    plain.produce(topic, b"after", partition=0)
    plain.flush(10)
    followers = [b for b in three.ports if b != leader]
    for follower in followers:
        status = wait_until(
            lambda f=follower: published_status(three, f, topic, high_watermark=5),
            10,
            f"broker {follower} to replicate everything",
        )
        assert status["open_transactions"] == [
            {
                "producer_id": status["open_transactions"][0]["producer_id"],
                "producer_epoch": 0,
                "first_offset": 1,
            }
        ]

    three.kill(leader)
    wait_until(lambda: three.state.topics()[topic].partitions[0].leader in followers, 15, "a new leader")
    survivors = ",".join(f"127.0.0.1:{three.ports[b]}" for b in followers)
    assert wait_until(lambda: latest_offsets_once_led(survivors, topic), 15, "ListOffsets") == (5, 1)
    txn.commit_transaction(30)
    [got] = consume(survivors, topic, 1, "read_committed", lambda got: len(got[0]) >= 5).values()
    assert got == [(0, b"before"), (1, b"open-0"), (2, b"open-1"), (3, b"open-2"), (4, b"after")]
    # The commit marker (offset 5) counts once the in-sync followers have it too.
    wait_until(
        lambda: latest_offsets(survivors, topic, 0) == (6, 6),
        15,
        "the high watermark and LSO to pass the commit marker",
    )
