"""Replication on real brokers and real signals: leaders, followers, ISR, high watermark,
acks, failover, fencing by epochs."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer

from brokerd.replication.fetcher import FETCH_MAX_WAIT_MS
from tests.cluster_harness import wait_until
from tests.kafka_helpers import consume_all, create_topic, partition_record, produce_sync, watermarks

pytestmark = pytest.mark.cluster

FAST = {"broker.session.timeout.ms": "1500", "replica.lag.time.max.ms": "3000"}


@pytest.fixture
def three(cluster_factory):
    return cluster_factory(3, FAST)


def test_leaders_spread_over_brokers_like_the_seeds_cases(three):
    create_topic(three, "case1", 2, 3, wait_for_leaders=True)
    create_topic(three, "case2", 3, 3, wait_for_leaders=True)
    case1 = three.state.topics()["case1"].partitions
    case2 = three.state.topics()["case2"].partitions
    assert len({p.leader for p in case1.values()}) == 2
    assert sorted(p.leader for p in case2.values()) == [1, 2, 3]
    for p in list(case1.values()) + list(case2.values()):
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isr) == [1, 2, 3]
        assert p.leader == p.replicas[0]


def test_leader_killed_during_acks_all_load_loses_nothing_acknowledged(three):
    create_topic(three, "ledger", 1, 3, wait_for_leaders=True)
    leader = partition_record(three, "ledger").leader
    acked: dict[bytes, int] = {}
    stop = threading.Event()
    after_kill = threading.Event()
    finished = threading.Event()
    # The first record produced once the leader was dead: an acknowledgement of an earlier
    # one may have left the old leader before the kill and only be delivered after it.
    first_after_kill: list[int] = []

    def load():
        producer = Producer(
            {
                "bootstrap.servers": three.bootstrap,
                "acks": "all",
                "linger.ms": 2,
                "enable.idempotence": True,
                "message.timeout.ms": 20000,
            }
        )

        def on_delivery(err, msg):
            if err is None:
                acked[msg.value()] = msg.offset()
                if first_after_kill and int(msg.value()[1:]) >= first_after_kill[0]:
                    after_kill.set()

        i = 0
        while not finished.is_set():
            if stop.is_set() and not first_after_kill:
                first_after_kill.append(i)
            producer.produce("ledger", b"r%08d" % i, partition=0, on_delivery=on_delivery)
            i += 1
            producer.poll(0.0005 if i % 100 else 0.005)
        producer.flush(20)

    thread = threading.Thread(target=load)
    thread.start()
    try:
        wait_until(lambda: len(acked) > 3000, 30, "3000 acknowledged records")
        three.kill(leader)
        killed_at = time.monotonic()
        stop.set()
        wait_until(after_kill.is_set, 15, "an acknowledgement from the new leader")
        failover_s = time.monotonic() - killed_at
    finally:
        stop.set()
        finished.set()
        thread.join(30)
    record = partition_record(three, "ledger")
    assert record.leader not in (leader, -1) and record.leader_epoch >= 1
    assert leader not in record.isr
    assert failover_s < 8, f"new leader took {failover_s:.1f}s"
    final = dict(acked)
    consumed = consume_all(three.bootstrap, "ledger", 1, len(final))
    by_value = {value: offset for _, offset, _, value in consumed}
    lost = [v for v in final if v not in by_value]
    assert not lost, f"{len(lost)} acknowledged records lost"
    assert all(by_value[v] == o for v, o in final.items()), "an acknowledged offset changed"
    offsets = [o for _, o, _, _ in consumed]
    assert offsets == list(range(len(offsets))), "duplicates or gaps"


def test_paused_follower_leaves_isr_and_the_high_watermark_keeps_moving(three):
    create_topic(three, "paused", 1, 3, wait_for_leaders=True)
    record = partition_record(three, "paused")
    follower = record.replicas[-1]
    three.signal(follower, signal.SIGSTOP)
    try:
        wait_until(
            lambda: follower not in partition_record(three, "paused").isr,
            15,
            "the paused follower to leave the ISR",
        )
        before = watermarks(three.bootstrap, "paused")[1]
        reports = produce_sync(three.bootstrap, "paused", [b"x"] * 50, acks="all")
        assert [e for e, _, _ in reports] == [None] * 50
        assert watermarks(three.bootstrap, "paused")[1] == before + 50
    finally:
        three.signal(follower, signal.SIGCONT)
    wait_until(
        lambda: follower in partition_record(three, "paused").isr,
        15,
        "the resumed follower to rejoin the ISR",
    )


def test_idle_followers_stay_in_sync_and_take_new_records_at_once(three):
    """Leaders stop reading the partitions an idle follower's fetch session parks; the
    follower still counts as caught up for as long as it fetches, and an append unparks
    the partition at once."""
    create_topic(three, "idle", 4, 3, wait_for_leaders=True)
    assert produce_sync(three.bootstrap, "idle", [b"first"], acks="all") == [(None, 0, 0)]
    lag_s = int(FAST["replica.lag.time.max.ms"]) / 1000
    watch_until = time.monotonic() + 3 * lag_s
    while time.monotonic() < watch_until:
        shrunk = {i: p.isr for i, p in three.state.topics()["idle"].partitions.items() if len(p.isr) < 3}
        assert not shrunk, f"idle followers left the ISR: {shrunk}"
        time.sleep(0.2)
    reports = produce_sync(three.bootstrap, "idle", [b"second"], acks="all", **{"message.timeout.ms": 5000})
    assert reports == [(None, 0, 1)]
    assert watermarks(three.bootstrap, "idle")[1] == 2


def test_min_insync_replicas_rejects_acks_all_but_not_acks_1(three):
    create_topic(three, "strict", 1, 3, {"min.insync.replicas": "2"}, wait_for_leaders=True)
    leader = partition_record(three, "strict").leader
    for broker in [b for b in (1, 2, 3) if b != leader]:
        three.kill(broker)
    wait_until(lambda: partition_record(three, "strict").isr == [leader], 15, "ISR = [leader]")
    reports = produce_sync(
        three.bootstrap, "strict", [b"all"], acks="all", **{"message.timeout.ms": 3000, "retries": 0}
    )
    assert reports[0][0] is not None and reports[0][0].name() == "NOT_ENOUGH_REPLICAS"
    reports = produce_sync(three.bootstrap, "strict", [b"one"], acks="1")
    assert reports[0][0] is None


def test_zombie_controller_is_fenced_by_its_epoch(three):
    create_topic(three, "fenced", 3, 3, wait_for_leaders=True)
    zombie, epoch = three.state.controller()
    three.signal(zombie, signal.SIGSTOP)
    try:
        wait_until(lambda: three.state.controller()[0] != zombie, 15, "a new controller")
        successor, new_epoch = three.state.controller()
        assert new_epoch > epoch
        # While the zombie sleeps, a broker dies: the zombie will want to react when it wakes.
        victim = next(b for b in (1, 2, 3) if b not in (zombie, successor))
        three.kill(victim)
        wait_until(
            lambda: all(p.leader != victim for p in three.state.topics()["fenced"].partitions.values()),
            15,
            "the successor to move leadership off the dead broker",
        )
        decided = three.state.topics()["fenced"]
    finally:
        three.signal(zombie, signal.SIGCONT)
    wait_until(
        lambda: "resigns as controller" in three.log_tail(zombie, 200),
        10,
        "the zombie to notice it was fenced",
    )
    assert three.state.controller() == (successor, new_epoch)
    after = three.state.topics()["fenced"]
    for index, p in after.partitions.items():
        assert p.leader_epoch >= decided.partitions[index].leader_epoch
        assert p.leader != victim


def test_resumed_stale_leader_truncates_its_divergent_tail(cluster_factory):
    cluster = cluster_factory(
        3,
        {
            "broker.session.timeout.ms": "1500",
            "replica.lag.time.max.ms": "60000",
            "auto.leader.rebalance.enable": "false",
        },
    )
    create_topic(cluster, "diverge", 1, 3, wait_for_leaders=True)
    record = partition_record(cluster, "diverge")
    old_leader, next_leader, third = record.replicas
    reports = produce_sync(cluster.bootstrap, "diverge", [b"c%d" % i for i in range(10)], acks="all")
    assert reports[-1] == (None, 0, 9)
    # Followers stop copying; the leader takes acks=1 writes only it will ever have. A paused
    # follower's fetch already waiting at the leader would still carry them (the kernel keeps
    # delivering to a stopped process), so let that long poll (FETCH_MAX_WAIT_MS) run out first.
    cluster.signal(next_leader, signal.SIGSTOP)
    cluster.signal(third, signal.SIGSTOP)
    time.sleep(2 * FETCH_MAX_WAIT_MS / 1000)
    reports = produce_sync(cluster.bootstrap, "diverge", [b"lost%d" % i for i in range(5)], acks="1")
    assert [o for _, _, o in reports] == [10, 11, 12, 13, 14]
    cluster.signal(old_leader, signal.SIGSTOP)
    cluster.signal(next_leader, signal.SIGCONT)
    cluster.signal(third, signal.SIGCONT)
    wait_until(
        lambda: partition_record(cluster, "diverge").leader == next_leader,
        15,
        "the next replica to take over",
    )
    assert (
        produce_sync(cluster.bootstrap, "diverge", [b"new%d" % i for i in range(5)], acks="all")[-1][0]
        is None
    )
    assert b"lost0" not in log_bytes(cluster, next_leader, "diverge"), "no divergence to test"
    assert b"lost0" in log_bytes(cluster, old_leader, "diverge")
    cluster.signal(old_leader, signal.SIGCONT)
    wait_until(
        lambda: old_leader in partition_record(cluster, "diverge").isr,
        20,
        "the old leader to truncate, catch up and rejoin the ISR",
    )
    consumed = consume_all(cluster.bootstrap, "diverge", 1, 15)
    values = [v for _, _, _, v in consumed]
    assert values == [b"c%d" % i for i in range(10)] + [b"new%d" % i for i in range(5)]
    assert "truncating divergent log" in cluster.log_tail(old_leader, 300)
    assert b"lost0" not in log_bytes(cluster, old_leader, "diverge")
    published = wait_until(
        lambda: (
            cluster.state.replica_status().get(old_leader, {}).get(("diverge", 0), {}).get("last_truncation")
        ),
        5,
        "the old leader to publish its truncation",
    )
    assert (published["from"], published["to"]) == (15, 10)  # what `kctl watch` narrates


def log_bytes(cluster, broker: int, topic: str, partition: int = 0) -> bytes:
    segments = sorted((cluster.state.broker_dir(broker) / "data" / f"{topic}-{partition}").glob("*.log"))
    return b"".join(p.read_bytes() for p in segments)


def test_kcat_consumer_follows_a_leader_change(three):
    create_topic(three, "follow", 1, 3, wait_for_leaders=True)
    leader = partition_record(three, "follow").leader
    produce_sync(three.bootstrap, "follow", [b"before%d" % i for i in range(5)], acks="all")
    kcat = subprocess.Popen(
        ["kcat", "-b", three.bootstrap, "-C", "-t", "follow", "-o", "beginning", "-u", "-f", "%s\n"],
        stdout=subprocess.PIPE,
    )
    try:
        three.kill(leader)
        wait_until(lambda: partition_record(three, "follow").leader not in (leader, -1), 15, "a new leader")
        produce_sync(three.bootstrap, "follow", [b"after%d" % i for i in range(5)], acks="all")
        lines = []
        wait_until(
            lambda: lines.append(kcat.stdout.readline()) or len(lines) >= 10, 30, "kcat to print every record"
        )
    finally:
        kcat.kill()
        kcat.wait()
    assert [line.strip() for line in lines] == [b"before%d" % i for i in range(5)] + [
        b"after%d" % i for i in range(5)
    ]


def test_graceful_stop_hands_leadership_over_and_preferred_leader_returns(cluster_factory):
    three = cluster_factory(3, FAST | {"leader.imbalance.check.interval.seconds": "1"})
    create_topic(three, "handover", 1, 3, wait_for_leaders=True)
    preferred = partition_record(three, "handover").leader
    epoch = partition_record(three, "handover").leader_epoch
    three.stop(preferred)
    record = partition_record(three, "handover")
    assert record.leader not in (preferred, -1), "leadership moved before the broker exited"
    assert record.leader_epoch == epoch + 1 and preferred not in record.isr
    exactly_once = {"acks": "all", "enable.idempotence": True}
    assert produce_sync(three.bootstrap, "handover", [b"during"], **exactly_once)[0][0] is None
    three.start(preferred)
    wait_until(
        lambda: partition_record(three, "handover").leader == preferred,
        20,
        "the imbalance check to give the preferred leader its leadership back",
    )
    assert produce_sync(three.bootstrap, "handover", [b"after"], **exactly_once)[0][0] is None
    assert [v for *_, v in consume_all(three.bootstrap, "handover", 1, 2)] == [b"during", b"after"]
