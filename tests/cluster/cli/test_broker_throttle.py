"""`kctl broker throttle`: one follower copies slowly, stays alive and keeps its leaderships,
falls out of the ISR after replica.lag.time.max.ms, and rejoins when the throttle is lifted."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Producer

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kafka_helpers import consume_all, create_topic
from tests.kctl.local import described_partition, kctl_in

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(150)]

RATE = 20_000  # bytes a second
RECORD = b"r" * 1000


def moment(cluster) -> dict:
    return described_partition(cluster.dir, "slow")


def test_a_throttled_follower_lags_leaves_the_isr_and_rejoins_when_lifted(cluster_factory):
    cluster = cluster_factory(3, {"replica.lag.time.max.ms": "3000", "auto.leader.rebalance.enable": "false"})
    create_topic(cluster.bootstrap, "slow", 1, 3)
    first = wait_until(lambda: (m := moment(cluster))["high_watermark"] is not None and m, 10, "a leader")
    follower = next(b for b in first["replicas"] if b != first["leader"])
    kctl_in(cluster.dir, "broker", "throttle", str(follower), "--rate", "20KB/s")
    brokers = json.loads(kctl_in(cluster.dir, "broker", "list", "--json").stdout)["brokers"]
    assert {b["id"]: b["replication_throttle_bytes_per_s"] for b in brokers}[follower] == RATE

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "1", "linger.ms": 5, "batch.num.messages": 5}
    )  # 5 kB batches: the throttle paces whole batches
    for _ in range(1000):
        producer.produce("slow", RECORD)
    assert producer.flush(30) == 0
    out = wait_until(
        lambda: follower not in (m := moment(cluster))["isr"] and m,
        15,
        "the throttled follower to leave the ISR",
    )
    assert (out["leader"], out["leader_epoch"]) == (first["leader"], first["leader_epoch"])
    start, began = out["log_end_offsets"][str(follower)], time.monotonic()
    time.sleep(2.0)  # measure the throttled copying over a known span
    later = moment(cluster)
    copied = (later["log_end_offsets"][str(follower)] - start) * len(RECORD)
    span = time.monotonic() - began
    assert 0 < copied <= RATE * (span + 1.5), f"{copied} bytes in {span:.1f}s at {RATE} B/s"
    assert later["log_end_offsets"][str(follower)] < later["high_watermark"] == 1000

    kctl_in(cluster.dir, "broker", "throttle", str(follower), "--off")
    back = wait_until(
        lambda: follower in (m := moment(cluster))["isr"] and m,
        20,
        "the follower to catch up and rejoin the ISR",
    )
    assert back["log_end_offsets"][str(follower)] == 1000
    assert back["leader_epoch"] == first["leader_epoch"]  # no leadership moved at any point
    assert len(consume_all(cluster.bootstrap, "slow", 1, 1000)) == 1000


def test_throttle_refusals(cluster_factory):
    cluster = cluster_factory(1)
    assert kctl_in(cluster.dir, "broker", "throttle", "1", expect=ExitCode.USAGE).stderr.strip()
    bad = kctl_in(cluster.dir, "broker", "throttle", "1", "--rate", "fast", expect=ExitCode.INVALID_INPUT)
    assert bad.stderr.count("\n") == 1 and "invalid rate 'fast'" in bad.stderr
    kctl_in(cluster.dir, "broker", "throttle", "9", "--rate", "1KB", expect=ExitCode.NOT_FOUND)
