"""`kctl produce` when the cluster stops acknowledging: on a real 3-broker cluster with
min.insync.replicas=2, losing two replicas makes the leader refuse acks=all records with
NOT_ENOUGH_REPLICAS. Refused before sending when it is so at the start; while running,
librdkafka retries the refusal until --timeout (its message.timeout.ms), and at the first
record that times out kctl stops with NOT_ENOUGH_REPLICAS (exit 6), not waiting out the rest;
records not acknowledged are counted, the timed-out ones apart."""

import time

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.local import BROKERS_ONLY, described_partition, kctl_in, kctl_json

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

REFUSED = "kctl: error: NOT_ENOUGH_REPLICAS: ISR 1 < min.insync.replicas 2 for orders/0; acks=all refused"


def partition0(directory) -> dict:
    return kctl_json(directory, "topic", "describe", "orders")["partitions"][0]


def test_acks_all_below_min_insync_replicas_fails_at_once(cluster_factory, kctl_processes):
    three = cluster_factory(3, {"broker.session.timeout.ms": "2000"})
    kctl_in(three.dir, "topic", "create", "orders", "-p", "1", "-r", "3", "-c", "min.insync.replicas=2")
    wait_until(
        lambda: len(described_partition(three.dir, "orders")["isr"]) == 3, 20, "a fully replicated partition"
    )
    running = kctl_processes(three.dir, "produce", "orders", "--json", "--timeout", "3")
    running.write(b"".join(b"r%d\n" % i for i in range(5)))
    running.wait_for(lambda: len(running.out) == 5, "5 delivery reports")

    leader = partition0(three.dir)["leader"]
    for follower in {1, 2, 3} - {leader}:
        three.kill(follower)
    wait_until(
        lambda: described_partition(three.dir, "orders")["isr"] == [leader],
        20,
        "the ISR to shrink to the leader",
    )

    started = time.monotonic()
    running.write(b"refused\n")  # stdin stays open: the failure ends the run
    assert running.finish() == ExitCode.CONFLICT, running.err
    assert time.monotonic() - started < 10  # --timeout 3 bounds librdkafka's retries
    assert running.err[-2:] == ["5 records produced to orders, 1 failed (1 timed out)", REFUSED]

    started = time.monotonic()
    refused = kctl_in(three.dir, "produce", "orders", input="a\nb\n", expect=ExitCode.CONFLICT)
    assert time.monotonic() - started < 5  # refused before sending: no timeout to wait
    assert refused.stderr == REFUSED + "\n"
    kctl_in(three.dir, "produce", "orders", "--acks", "1", input="leader-only\n")
    assert partition0(three.dir)["high_watermark"] == 6


def test_timeout_bounds_how_long_records_wait(cluster, kctl_processes):
    kctl_in(cluster.dir, "topic", "create", "slow", "-p", "1")
    running = kctl_processes(cluster.dir, "produce", "slow", "--timeout", "1", "--json")
    running.write(b"first\n")
    running.wait_for(lambda: running.out, "the first delivery report")
    cluster.kill(1)
    started = time.monotonic()
    running.write(b"lost\n")
    assert running.finish() == ExitCode.UNREACHABLE
    assert time.monotonic() - started < 6
    assert running.err[-2:] == [
        "1 record produced to slow, 1 failed (1 timed out)",
        "kctl: error: delivery failed: Local: Message timed out (not acknowledged within 1s)",
    ]


def test_producing_to_a_new_topic_waits_for_its_leaders(cluster_dir):
    """The first metadata request auto-creates the topic and is answered LEADER_NOT_AVAILABLE
    until the controller elects its leaders: kctl asks again instead of failing (it failed
    about one time in three on a `kctl cluster up` cluster)."""
    kctl_in(cluster_dir, "cluster", "up", *BROKERS_ONLY)
    for n in range(6):
        kctl_in(cluster_dir, "produce", f"new-{n}", input=f"first-{n}\n")
        consumed = kctl_in(cluster_dir, "consume", f"new-{n}", "-o", "start", "-e")
        assert consumed.stdout == f"first-{n}\n".encode()
