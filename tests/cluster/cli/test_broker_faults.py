"""Fault injection through the CLI on real brokerd daemons: `kctl broker kill|stop|start|pause|
resume` send real signals, and `kctl broker list`, `cluster status`, `topic describe` and
`watch --once --json` must all report what the cluster did about it (leader moved, epoch
rose, ISR shrank and grew back)."""

import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import kctl_command, kctl_env
from tests.kctl.local import BROKERS_ONLY, described_partition, kctl_in, kctl_json

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

SESSION_MS = 2000  # a paused broker is presumed dead after 2 s instead of 3


def states(directory) -> dict[int, str]:
    return {b["id"]: b["state"] for b in kctl_json(directory, "broker", "list")["brokers"]}


def partition0(directory) -> dict:
    return kctl_json(directory, "topic", "describe", "demo")["partitions"][0]


def watched(directory) -> dict:
    """Partition 0 and the broker states as `kctl watch --once --json` reports them."""
    snap = kctl_json(directory, "watch", "demo", "--once")
    return {
        "partition": snap["topics"][0]["partitions"][0],
        "brokers": {b["id"]: b["state"] for b in snap["brokers"]},
        "controller": snap["controller"],
    }


def settled(directory, predicate, what, timeout=20):
    """Poll partition 0 as `topic describe` shows it until it satisfies `predicate`; returns it."""
    return wait_until(
        lambda: (lambda p: p if predicate(p) else None)(described_partition(directory, "demo")),
        timeout,
        what,
        interval=0.1,
    )


def broker_setting(bootstrap: str, broker_id: int, name: str) -> str:
    resource = ConfigResource(ResourceType.BROKER, str(broker_id))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_configs([resource])[resource].result(10)[name].value


def test_kill_start_pause_resume_stop(cluster_dir):
    up = kctl_json(
        cluster_dir, "cluster", "up", "-o", f"broker.session.timeout.ms={SESSION_MS}", *BROKERS_ONLY
    )
    assert len(up["brokers"]) == 3  # the default size
    assert up["broker_config"] == {
        "broker.session.timeout.ms": str(SESSION_MS),
        "default.replication.factor": "3",
    }
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "1")
    kctl_in(cluster_dir, "produce", "demo", "--acks", "all", input="".join(f"r{i}\n" for i in range(10)))
    first = settled(cluster_dir, lambda p: len(p["isr"]) == 3, "a replicated partition")
    assert len(first["replicas"]) == 3  # min(3, N) replicas
    leader, epoch = first["leader"], first["leader_epoch"]

    kctl_in(cluster_dir, "broker", "kill", str(leader))
    assert states(cluster_dir)[leader] == "dead"
    moved = settled(
        cluster_dir,
        lambda p: p["leader"] not in (leader, -1) and leader not in p["isr"],
        "the leader to move off the killed broker",
    )
    assert moved["leader_epoch"] > epoch and moved["high_watermark"] == 10
    seen = watched(cluster_dir)
    assert seen["brokers"][leader] == "dead"
    assert (seen["partition"]["leader"], seen["partition"]["leader_epoch"]) == (
        moved["leader"],
        moved["leader_epoch"],
    )
    assert leader not in seen["partition"]["isr"] and seen["partition"]["high_watermark"] == 10
    status = kctl_json(cluster_dir, "cluster", "status", expect=ExitCode.UNHEALTHY)
    assert f"broker {leader} is dead" in status["problems"]

    kctl_in(cluster_dir, "broker", "start", str(leader))
    settled(cluster_dir, lambda p: sorted(p["isr"]) == [1, 2, 3], "the restarted broker to rejoin the ISR")
    bootstrap = kctl_json(cluster_dir, "cluster", "up", *BROKERS_ONLY)["bootstrap"]  # all running: a no-op
    assert broker_setting(bootstrap, leader, "broker.session.timeout.ms") == str(SESSION_MS)  # remembered

    follower = next(b for b in partition0(cluster_dir)["replicas"] if b != partition0(cluster_dir)["leader"])
    kctl_in(cluster_dir, "broker", "pause", str(follower))
    wait_until(lambda: states(cluster_dir)[follower] == "paused", 10, "the paused broker's lease to expire")
    settled(cluster_dir, lambda p: follower not in p["isr"], "the ISR to shrink")
    assert watched(cluster_dir)["brokers"][follower] == "paused"
    status = kctl_json(cluster_dir, "cluster", "status", expect=ExitCode.UNHEALTHY)
    assert f"broker {follower} is paused" in status["problems"]
    kctl_in(cluster_dir, "broker", "resume", str(follower))
    settled(cluster_dir, lambda p: sorted(p["isr"]) == [1, 2, 3], "the resumed broker to rejoin the ISR")
    wait_until(lambda: set(states(cluster_dir).values()) == {"alive"}, 10, "every broker alive")

    current = partition0(cluster_dir)
    kctl_in(cluster_dir, "broker", "stop", str(current["leader"]))
    assert states(cluster_dir)[current["leader"]] == "dead"  # it waited for the exit
    after = watched(cluster_dir)["partition"]
    assert after["leader"] not in (current["leader"], -1)  # handed over first
    assert after["leader_epoch"] > current["leader_epoch"]


def test_an_unclean_election_by_hand_trades_the_unreplicated_tail_for_availability(cluster_dir):
    kctl_in(
        cluster_dir,
        "cluster",
        "up",
        *BROKERS_ONLY,
        "-n",
        "2",
        "-o",
        f"broker.session.timeout.ms={SESSION_MS}",
        "-o",
        "auto.leader.rebalance.enable=false",
    )
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "1", "-r", "2", "-c", "min.insync.replicas=1")
    kctl_in(cluster_dir, "produce", "demo", "--acks", "all", input="".join(f"kept{i}\n" for i in range(10)))
    first = settled(cluster_dir, lambda p: len(p["isr"]) == 2, "a replicated partition")
    leader = first["leader"]
    follower = next(b for b in first["replicas"] if b != leader)
    kctl_in(cluster_dir, "broker", "pause", str(follower))
    settled(cluster_dir, lambda p: p["isr"] == [leader], "the paused follower to leave the ISR")
    kctl_in(cluster_dir, "produce", "demo", "--acks", "1", input="".join(f"lost{i}\n" for i in range(5)))
    kctl_in(cluster_dir, "broker", "kill", str(leader))
    kctl_in(cluster_dir, "broker", "resume", str(follower))
    settled(cluster_dir, lambda p: p["leader"] == -1, "the partition to go offline")

    refused = kctl_in(cluster_dir, "topic", "elect-leaders", "demo", expect=ExitCode.CONFLICT)
    assert refused.stderr.count("\n") == 1 and "preferred leader" in refused.stderr
    elected = kctl_in(cluster_dir, "topic", "elect-leaders", "demo", "--election-type", "unclean")
    assert b"elected" in elected.stdout
    after = settled(cluster_dir, lambda p: p["leader"] == follower, "the out-of-sync follower to lead")
    assert after["isr"] == [follower] and after["leader_epoch"] > first["leader_epoch"]
    assert watched(cluster_dir)["partition"]["last_unclean_election"] == {
        "leader_epoch": after["leader_epoch"],
        "isr": [leader],
    }  # what watch narrates
    consumed = kctl_in(cluster_dir, "consume", "demo", "-o", "start", "-e").stdout.decode().splitlines()
    assert consumed == [f"kept{i}" for i in range(10)]  # the acks=1 tail is gone
    again = kctl_in(cluster_dir, "topic", "elect-leaders", "demo", "--election-type", "unclean")
    assert b"has a live leader" in again.stdout


def test_consume_to_the_end_waits_while_a_restarted_leader_cannot_name_its_end(cluster_dir, kctl_processes):
    """The leader is restarted while its followers are paused and it has no high watermark
    checkpoint: ListOffsets answers OFFSET_NOT_AVAILABLE until they fetch again. kctl keeps
    asking instead of failing, and then reads everything."""
    kctl_in(
        cluster_dir,
        "cluster",
        "up",
        *BROKERS_ONLY,
        "-o",
        "broker.session.timeout.ms=30000",
        "-o",
        "replica.lag.time.max.ms=30000",
        "-o",
        "replica.high.watermark.checkpoint.interval.ms=3600000",
    )
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "1")
    kctl_in(cluster_dir, "produce", "demo", "--acks", "all", input="".join(f"r{i}\n" for i in range(20)))
    first = settled(cluster_dir, lambda p: len(p["isr"]) == 3, "a replicated partition")
    followers = [b for b in first["replicas"] if b != first["leader"]]
    for follower in followers:
        kctl_in(cluster_dir, "broker", "pause", str(follower))
    kctl_in(cluster_dir, "broker", "kill", str(first["leader"]))
    kctl_in(cluster_dir, "broker", "start", str(first["leader"]))

    reader = kctl_processes(cluster_dir, "consume", "demo", "-o", "start", "-e", "--timeout", "60")
    with pytest.raises(subprocess.TimeoutExpired):
        reader.proc.wait(3)  # still asking: the leader cannot tell where the partition ends
    for follower in followers:
        kctl_in(cluster_dir, "broker", "resume", str(follower))
    assert reader.finish(30) == 0, reader.err
    assert reader.out == [f"r{i}" for i in range(20)]


def test_refusals_are_one_line_with_a_documented_code(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", "--brokers", "1", *BROKERS_ONLY)
    kctl_in(cluster_dir, "broker", "kill", "1")
    for args, code, message in [
        (["broker", "kill", "1"], ExitCode.CONFLICT, "broker 1 is not running"),
        (["broker", "pause", "1"], ExitCode.CONFLICT, "broker 1 is not running"),
        (["broker", "stop", "1"], ExitCode.CONFLICT, "broker 1 is not running"),
        (["broker", "resume", "7"], ExitCode.NOT_FOUND, "unknown broker 7"),
    ]:
        result = kctl_in(cluster_dir, *args, expect=code)
        assert result.stderr.startswith(f"kctl: error: {message}") and result.stderr.count("\n") == 1
    kctl_in(cluster_dir, "broker", "start", "1")
    again = kctl_in(cluster_dir, "broker", "start", "1", expect=ExitCode.CONFLICT)
    assert "broker 1 is already running" in again.stderr
    assert kctl_json(cluster_dir, "cluster", "status")["healthy"]


def test_live_watch_draws_on_a_terminal_and_ends_on_ctrl_c(cluster_factory):
    cluster = cluster_factory(1)
    kctl_in(cluster.dir, "topic", "create", "demo", "-p", "2")
    pid, fd = pty.fork()
    if pid == 0:  # the child: kctl watch with a terminal as stdout; never returns to pytest
        try:
            os.execve(
                sys.executable,
                kctl_command("watch", "--interval", "0.1"),
                {**kctl_env({"KCTL_HOME": str(cluster.dir)}), "COLUMNS": "120"},
            )
        finally:
            os._exit(127)
    screen = b""
    deadline = time.monotonic() + 20
    while screen.count(b"TOPIC demo") < 2 and time.monotonic() < deadline:  # redrawn at least once
        if select.select([fd], [], [], 0.1)[0]:
            screen += os.read(fd, 65536)
    os.kill(pid, signal.SIGINT)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert screen.count(b"TOPIC demo") >= 2, screen[-2000:]
    assert os.waitstatus_to_exitcode(status) == ExitCode.INTERRUPTED
