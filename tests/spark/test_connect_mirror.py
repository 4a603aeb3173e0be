"""MirrorMaker 2 on the connect worker, between two local kctl clusters: a MirrorSource and a
MirrorCheckpoint connector on a worker beside the target copy 100,000 records (keys, headers,
timestamps) in 6 partitions and a group's committed offsets, across a SIGKILL of the worker;
the remote topic holds every record once, in order, in its partition, and the group reads on
the target exactly the half it had not read on the source. One worker start, one Spark
application, per start."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from connect.mirror.records import Checkpoint
from kctl.cluster import localservice
from tests.cluster_harness import wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import BROKERS_ONLY, kctl_json, kill_leftovers
from tests.service_harness import call
from tests.spark.helpers import TIMEOUT_S, consume_all

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect"), pytest.mark.timeout(600)]

SPARK_WAIT_S = 240
RECORDS, PARTITIONS, TOPIC, GROUP = 100_000, 6, "orders", "billing"
REMOTE = "east.orders"
T0 = int(time.time() * 1000) - 3_600_000  # an hour ago: well within the topic's retention


@dataclass
class Clusters:
    source: Path
    target: Path
    url: str

    def bootstrap(self, home: Path) -> str:
        brokers = kctl_json(home, "cluster", "status")["brokers"]
        return ",".join(f"{b['host']}:{b['port']}" for b in brokers)


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    home = tmp_path_factory.mktemp("mirror")
    source, target = home / "source", home / "target"
    try:
        for directory in (source, target):
            up = run_kctl("cluster", "up", "--brokers", "1", *BROKERS_ONLY, env=_env(directory), timeout=120)
            assert up.returncode == 0, up.stderr
        started = run_kctl("connect", "up", env=_env(target), timeout=60)
        assert started.returncode == 0, started.stderr
        yield Clusters(
            source, target, started.stdout.decode().strip().removeprefix("export KCTL_CONNECT_URL=")
        )
    finally:
        for directory in (target, source):
            run_kctl("cluster", "down", env=_env(directory), timeout=60)
            kill_leftovers(directory)


def _env(directory: Path) -> dict[str, str]:
    return {"KCTL_HOME": str(directory)}


def _produce(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(
                    TOPIC,
                    f"value-{i}".encode(),
                    f"key-{i}".encode(),
                    partition=i % PARTITIONS,
                    headers=[("seq", str(i).encode()), ("empty", b"")],
                    timestamp=T0 + i,
                )
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(TIMEOUT_S) == 0


def _halves() -> dict[int, int]:
    """Per partition, how many records the group reads on the source: 50,000 in all."""
    counts = Counter(i % PARTITIONS for i in range(RECORDS))
    halves = {p: n // 2 for p, n in counts.items()}
    for p in sorted(halves)[: RECORDS // 2 - sum(halves.values())]:
        halves[p] += 1
    return halves


def _consume_half_and_commit(bootstrap: str, halves: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in halves])
        read = Counter()
        while sum(read.values()) < RECORDS // 2:
            for msg in consumer.consume(10000, timeout=1):
                assert msg.error() is None
                if read[msg.partition()] < halves[msg.partition()]:
                    read[msg.partition()] += 1
                else:
                    consumer.pause([TopicPartition(TOPIC, msg.partition())])
        offsets = [TopicPartition(TOPIC, p, n) for p, n in halves.items()]
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()


def _by_partition(messages) -> dict[int, list[tuple]]:
    found: dict[int, list[tuple]] = {}
    for m in messages:
        found.setdefault(m.partition(), []).append((m.key(), m.value(), m.headers(), m.timestamp()[1]))
    return found


def _count(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        # all topics: a metadata request naming a missing topic would have the broker create it
        topics = consumer.list_topics(timeout=TIMEOUT_S).topics
        if topic not in topics or topics[topic].error is not None:
            return 0
        marks = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S)
            for p in topics[topic].partitions
        ]
        return sum(high - low for low, high in marks)
    finally:
        consumer.close()


def _committed(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        found = consumer.committed([TopicPartition(REMOTE, p) for p in range(PARTITIONS)], timeout=TIMEOUT_S)
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    except Exception:  # the remote topic is not there yet
        return {}
    finally:
        consumer.close()


def test_a_mirrored_topic_and_group_survive_a_sigkill_of_the_worker(clusters):
    source, target = clusters.bootstrap(clusters.source), clusters.bootstrap(clusters.target)
    configs = ("-c", "retention.ms=86400000", "-c", "min.insync.replicas=1")  # MM2 copies the first only
    created = run_kctl("topic", "create", TOPIC, "-p", str(PARTITIONS), *configs, env=_env(clusters.source))
    assert created.returncode == 0, created.stderr
    assert _topic_configs(source, TOPIC) == {"retention.ms": "86400000", "min.insync.replicas": "1"}
    _produce(source)
    halves = _halves()
    _consume_half_and_commit(source, halves)
    common = {
        "source.cluster.alias": "east",
        "target.cluster.alias": "west",
        "source.cluster.bootstrap.servers": source,  # the target is the worker's own cluster
        "topics": TOPIC,
    }
    mirror = {"connector.class": "MirrorSourceConnector", **common}
    checkpoints = {
        "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
        **common,
        "sync.group.offsets.enabled": "true",
        "emit.checkpoints.interval.seconds": "1",
        "sync.group.offsets.interval.seconds": "1",
    }
    for name, config in (("mirror", mirror), ("checkpoints", checkpoints)):
        status, body = call(clusters.url, "POST", "/connectors", {"name": name, "config": config})
        assert status == 201, body

    wait_until(lambda: _count(target, REMOTE) > 0, SPARK_WAIT_S, "the first mirrored records", 0.2)
    running = localservice.running(clusters.target, localservice.CONNECT)
    assert running is not None
    os.kill(running.pid, signal.SIGKILL)
    again = run_kctl("connect", "up", env=_env(clusters.target), timeout=60)
    assert again.returncode == 0, again.stderr

    wait_until(lambda: _count(target, REMOTE) >= RECORDS, SPARK_WAIT_S, "every record mirrored", 0.5)
    mirrored, original = _by_partition(consume_all(target, REMOTE)), _by_partition(consume_all(source, TOPIC))
    assert sorted(mirrored) == list(range(PARTITIONS))
    for p in range(PARTITIONS):
        assert mirrored[p] == original[p], f"partition {p}"
    assert _topic_configs(target, REMOTE) == {"retention.ms": "86400000"}

    wait_until(lambda: _committed(target) == halves, 120, "the group's translated offsets on the target", 0.5)
    rest = _read_as_group(target)
    assert rest == {p: original[p][halves[p] :] for p in range(PARTITIONS)}
    latest = _checkpoints(target)
    assert {(c.topic, c.partition): (c.upstream, c.downstream) for c in latest} == {
        (REMOTE, p): (n, n) for p, n in halves.items()
    }
    offsets = call(clusters.url, "GET", "/connectors/mirror/offsets")[1]["offsets"]
    assert {o["partition"]["partition"]: o["offset"]["offset"] for o in offsets} == {
        p: len(original[p]) - 1 for p in range(PARTITIONS)
    }


def _topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    """The topic's configs set on it (not the brokers' defaults)."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer: its handle serves it
    entries = admin.describe_configs([resource])[resource].result()
    return {k: e.value for k, e in entries.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def _read_as_group(bootstrap: str) -> dict[int, list[tuple]]:
    """What the group reads on the target from its committed offsets, to the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    found = []
    try:
        consumer.subscribe([REMOTE])
        idle = 0
        while idle < 5 and len(found) <= RECORDS // 2:
            batch = consumer.consume(10000, timeout=1)
            idle = 0 if batch else idle + 1
            found += [m for m in batch if m.error() is None]
    finally:
        consumer.close()
    assert len(found) == RECORDS // 2
    return _by_partition(found)


def _checkpoints(bootstrap: str) -> list[Checkpoint]:
    latest: dict[bytes, Checkpoint] = {}
    for m in consume_all(bootstrap, "east.checkpoints.internal"):
        latest[m.key()] = Checkpoint.decode(m.key(), m.value())
    return [c for c in latest.values() if c.group == GROUP]
