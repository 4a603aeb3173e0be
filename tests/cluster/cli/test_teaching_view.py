"""What `kctl watch` and `kctl topic describe` show while brokers are paused under load: every
moment shown is possible, and the watch narrates stalls, ISR changes and fencing as they happen.

Real brokers, real SIGSTOP/SIGCONT; snapshots are read from the state directory exactly as
`kctl watch` reads them, and `kctl topic describe --json` runs as a user would run it.
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kctl.cluster import snapshot
from kctl.watch import events
from tests.cluster_harness import wait_until
from tests.kctl.local import kctl_in

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

# A paused follower leaves the ISR when its broker's lease lapses (broker.session.timeout.ms,
# 3 s by default), well after the high watermark has stalled on it for a second.
SETTINGS = {"replica.lag.time.max.ms": "10000", "auto.leader.rebalance.enable": "false"}


class Narrator(threading.Thread):
    """`kctl watch`'s loop without the screen: snapshots every 50 ms, their events, and every
    partition moment seen, for the test to check."""

    def __init__(self, cluster, topic: str):
        super().__init__(daemon=True)
        self.cluster, self.topic = cluster, topic
        self.moments: list[dict] = []
        self.lines: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        before = None
        while not self.done.is_set():
            snap = snapshot.take(self.cluster.state, self.topic)
            self.moments += [p for t in snap["topics"] for p in t["partitions"]]
            if before is not None:
                self.lines += events.changes(before, snap)
            before = snap
            time.sleep(0.05)

    def said(self, fragment: str) -> str | None:
        return next((line for line in self.lines if fragment in line), None)


def impossible(p: dict) -> list[str]:
    """What no real partition can be: the complaints a teacher would have."""
    hwm, ends, leader = p["high_watermark"], p["log_end_offsets"], str(p["leader"])
    if hwm is None:
        return []
    wrong = []
    if ends.get(leader) is not None:
        wrong += [
            f"replica {b} at {e} ahead of leader at {ends[leader]}"
            for b, e in ends.items()
            if e is not None and e > ends[leader]
        ]
    wrong += [
        f"hwm {hwm} above in-sync replica {b} at {ends[str(b)]}"
        for b in p["isr"]
        if ends.get(str(b)) is not None and ends[str(b)] < hwm
    ]
    if p["last_stable_offset"] is not None and p["last_stable_offset"] > hwm:
        wrong.append(f"lso {p['last_stable_offset']} above hwm {hwm}")
    if p["log_start_offset"] > hwm:
        wrong.append(f"log start {p['log_start_offset']} above hwm {hwm}")
    return wrong


def steady_load(
    bootstrap: str, topic: str, stop: threading.Event, acknowledged: list[int]
) -> threading.Thread:
    """An acks=all idempotent producer until ``stop``; ``acknowledged[0]`` counts its acks."""

    def count(err, _msg):
        if err is None:
            acknowledged[0] += 1

    def run():
        producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True}
        )
        while not stop.is_set():
            producer.produce(topic, b"x" * 100, on_delivery=count)
            producer.poll(0.002)
        producer.flush(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_pausing_followers_under_load_shows_only_possible_moments(cluster_factory):
    cluster = cluster_factory(3, SETTINGS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("lesson", 1, 3, config={"min.insync.replicas": "2"})])["lesson"].result(10)
    record = wait_until(
        lambda: (r := cluster.state.topics()["lesson"].partitions[0]).leader > 0 and r, 10, "a leader"
    )
    first, second = [b for b in record.replicas if b != record.leader]
    narrator, stop = Narrator(cluster, "lesson"), threading.Event()
    narrator.start()
    acknowledged = [0]
    load = steady_load(cluster.bootstrap, "lesson", stop, acknowledged)
    try:
        # the producer has its producer id before a broker pauses: InitProducerId may go to
        # any broker, and one sent to the paused broker would hold every record back
        wait_until(lambda: acknowledged[0] > 0, 15, "the first acknowledged record")
        cluster.signal(first, signal.SIGSTOP)
        stalled = wait_until(lambda: narrator.said("high watermark stalled"), 15, "a stall narrated")
        wait_until(lambda: narrator.said("ISR shrank"), 15, "the paused follower to leave the ISR")
        wait_until(lambda: narrator.said("high watermark moving again"), 10, "the stall to end")
        cluster.signal(second, signal.SIGSTOP)
        wait_until(lambda: narrator.said("< min.insync.replicas=2"), 15, "acks=all refused, narrated")
        described = json.loads(kctl_in(cluster.dir, "topic", "describe", "lesson", "--json").stdout)
        cluster.signal(first, signal.SIGCONT)
        cluster.signal(second, signal.SIGCONT)
        wait_until(lambda: narrator.said("back to min.insync.replicas=2"), 20, "the ISR to recover")
        start = max(m["high_watermark"] or 0 for m in narrator.moments)
        for future in admin.delete_records([TopicPartition("lesson", 0, start)]).values():
            future.result()
        deleted = wait_until(
            lambda: narrator.said(f"-> {start}: DeleteRecords"), 10, "DeleteRecords narrated"
        )
    finally:
        cluster.signal(first, signal.SIGCONT)
        cluster.signal(second, signal.SIGCONT)
        stop.set()
        load.join(40)
        narrator.done.set()
        narrator.join(5)
    assert f"in-sync replica(s) {first} not fetching" in stalled
    assert deleted == f"lesson/0: log start 0 -> {start}: DeleteRecords"
    wrong = [(m, w) for m in narrator.moments for w in impossible(m)]
    assert not wrong, wrong[:5]
    assert len([m for m in narrator.moments if m["high_watermark"] is not None]) > 100
    part = described["partitions"][0]
    assert not impossible(part) and part["isr"] == [record.leader]
    assert part["log_end_offsets"][str(record.leader)] >= part["high_watermark"] > 0


def test_a_paused_controller_wakes_up_fenced(cluster_factory):
    cluster = cluster_factory(3, {"broker.session.timeout.ms": "1500"})
    old, epoch = wait_until(cluster.state.controller, 10, "a controller")
    narrator = Narrator(cluster, None)
    narrator.start()
    try:
        cluster.signal(old, signal.SIGSTOP)
        wait_until(lambda: cluster.state.controller()[1] > epoch, 15, "a new controller")
        cluster.signal(old, signal.SIGCONT)
        line = wait_until(lambda: narrator.said("fenced"), 15, "the zombie's fencing, narrated")
    finally:
        cluster.signal(old, signal.SIGCONT)
        narrator.done.set()
        narrator.join(5)
    assert line.startswith(f"controller: broker {old} woke up with controller epoch {epoch}")


def test_a_preferred_leader_back_is_told_with_the_imbalance_that_moved_it(cluster_factory):
    cluster = cluster_factory(
        3, {"broker.session.timeout.ms": "1500", "leader.imbalance.check.interval.seconds": "2"}
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("payments", 3, 3)])["payments"].result(10)  # one preferred each

    def partition(index: int):
        return cluster.state.topics()["payments"].partitions[index]

    wait_until(lambda: all(len(partition(i).isr) == 3 for i in range(3)), 15, "replicated partitions")
    controller, _ = cluster.state.controller()
    index = next(i for i in range(3) if partition(i).replicas[0] != controller)
    preferred = partition(index).replicas[0]
    narrator = Narrator(cluster, "payments")
    narrator.start()
    try:
        cluster.kill(preferred)
        interim = wait_until(
            lambda: (p := partition(index)).leader not in (preferred, -1) and p, 15, "a failover"
        ).leader
        cluster.start(preferred)
        line = wait_until(
            lambda: narrator.said("preferred leader back"), 20, "the imbalance check's move, narrated"
        )
    finally:
        narrator.done.set()
        narrator.join(5)
    epoch = partition(index).leader_epoch
    assert line == (
        f"payments/{index}: leader {interim} -> {preferred}, epoch {epoch - 1} -> "
        f"{epoch}: preferred leader back after the imbalance check (broker "
        f"{preferred} led 0 of its 1 preferred partition, 100% led elsewhere, above "
        "leader.imbalance.per.broker.percentage=10)"
    )
