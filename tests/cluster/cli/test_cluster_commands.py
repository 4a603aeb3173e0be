"""kctl against real brokerd processes: cluster up/status/down, and what only a local cluster
shows (per-replica log end offsets, leader epochs), topic admin, offsets by timestamp."""

import json
import os
import signal
import socket
import time

import pytest

from brokerd.state import ClusterState
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import free_port, wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import kctl_in

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def status(directory, expect=0):
    return json.loads(kctl_in(directory, "cluster", "status", "--json", expect=expect).stdout)


def test_up_status_restart_down(cluster_dir):
    up = kctl_in(cluster_dir, "cluster", "up", "--brokers", "3")
    lines = up.stdout.decode().splitlines()
    assert lines[0].split() == ["ID", "ADDRESS", "PID", "STATE", "LEASE-AGE", "THROTTLE"]
    assert [line.split()[3] for line in lines[1:4]] == ["started"] * 3
    ports = ClusterState(cluster_dir).planned_brokers()
    assert lines[-1] == "export KCTL_BOOTSTRAP=" + ",".join(f"127.0.1.{i}:{p}" for i, p in ports.items())
    assert "Next:" in up.stderr

    doc = status(cluster_dir)
    assert doc["healthy"] and doc["controller"]["broker_id"] in (1, 2, 3)
    assert [b["state"] for b in doc["brokers"]] == ["alive"] * 3

    again = kctl_in(cluster_dir, "cluster", "up")
    assert "already running" in again.stdout.decode() and "already running" in again.stderr

    victim = doc["brokers"][1]
    os.kill(victim["pid"], signal.SIGKILL)
    wait_until(lambda: not ClusterState(cluster_dir).is_alive(2), 10, "broker 2 to die")
    unhealthy = status(cluster_dir, expect=ExitCode.UNHEALTHY)
    assert unhealthy["brokers"][1]["state"] == "dead" and not unhealthy["healthy"]

    restarted = kctl_in(cluster_dir, "cluster", "up")
    assert "started" in restarted.stdout.decode().splitlines()[2]
    assert ClusterState(cluster_dir).planned_brokers() == ports  # same ports
    assert status(cluster_dir)["healthy"]

    down = kctl_in(cluster_dir, "cluster", "down")
    rows = [line.split() for line in down.stdout.decode().splitlines()[1:]]
    assert rows[:3] == [["1", "stopped"], ["2", "stopped"], ["3", "stopped"]]
    assert rows[3:] == [["schema", "registry", "stopped"], ["REST", "proxy", "stopped"]]
    stopped = status(cluster_dir, expect=ExitCode.UNHEALTHY)
    assert stopped["brokers"][0]["state"] == "dead" and stopped["schema_registry"] is None
    kctl_in(cluster_dir, "topic", "list", expect=ExitCode.UNREACHABLE)


def test_port_in_use_is_one_clear_line(cluster_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = kctl_in(cluster_dir, "cluster", "up", "--port-base", str(port), expect=ExitCode.ERROR)
    assert result.stderr.strip() == f"kctl: error: port {port} is already in use by another process"
    assert not ClusterState(cluster_dir).exists()


def test_a_broker_that_dies_at_startup_shows_its_log(cluster_dir):
    (cluster_dir / "brokers" / "1").mkdir(parents=True)
    (cluster_dir / "brokers" / "1" / "data").write_text("not a directory")
    result = kctl_in(
        cluster_dir, "cluster", "up", "--brokers", "1", "--port-base", str(free_port()), expect=ExitCode.ERROR
    )
    assert "last lines of" in result.stderr and "cannot start" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("kctl: error: broker 1 exited with code")


def test_changing_the_size_of_an_existing_cluster_is_refused(cluster_dir):
    ClusterState(cluster_dir).initialize({1: free_port()})
    result = kctl_in(cluster_dir, "cluster", "up", "--brokers", "3", expect=ExitCode.INVALID_INPUT)
    assert "has 1 broker(s), not 3" in result.stderr


def test_describe_shows_every_replica_of_a_local_cluster(cluster_factory):
    cluster = cluster_factory(3)
    kctl_in(cluster.dir, "topic", "create", "orders", "-p", "2", "-r", "3", "-c", "retention.ms=86400000")
    kctl_in(cluster.dir, "produce", "orders", "-p", "1", "--acks", "all", input=b"a\nb\nc\n")

    def settled():
        doc = json.loads(kctl_in(cluster.dir, "topic", "describe", "orders", "--json").stdout)
        part = doc["partitions"][1]
        return doc if set(part["log_end_offsets"].values()) == {3} else None

    doc = wait_until(settled, 15, "followers to catch up")
    part = doc["partitions"][1]
    assert part["high_watermark"] == 3 and part["log_start_offset"] == 0
    assert sorted(part["replicas"]) == [1, 2, 3] and sorted(part["isr"]) == [1, 2, 3]
    assert sorted(part["log_end_offsets"]) == ["1", "2", "3"]
    assert isinstance(part["leader_epoch"], int)
    assert doc["configs"]["retention.ms"]["value"] == "86400000"

    text = kctl_in(cluster.dir, "topic", "describe", "orders").stdout.decode()
    assert "PARTITIONS" in text and "CONFIGS" in text and "retention.ms" in text
    assert "segment.bytes" not in text  # a default: listed with --all-configs only
    everything = kctl_in(cluster.dir, "topic", "describe", "orders", "--all-configs").stdout.decode()
    assert "segment.bytes" in everything and "default_config" in everything


def test_describe_of_a_topic_with_only_defaults_shows_no_empty_config_table(cluster_factory):
    cluster = cluster_factory(1)
    kctl_in(cluster.dir, "topic", "create", "plain", "-p", "1")
    lines = kctl_in(cluster.dir, "topic", "describe", "plain").stdout.decode().splitlines()
    said = lines.index("CONFIGS: all defaults (--all-configs lists them)")
    assert lines[said + 1] == "PARTITIONS"  # the next section, no KEY VALUE SOURCE header
    assert not any(line.split() == ["KEY", "VALUE", "SOURCE"] for line in lines)
    drawn = run_kctl("topic", "describe", "plain", env={"KCTL_HOME": str(cluster.dir), "TTY_COMPATIBLE": "1"})
    assert drawn.returncode == 0 and b"CONFIGS: all defaults" in drawn.stdout  # Rich, as on a terminal
    assert "┏".encode() in drawn.stdout and b"SOURCE" not in drawn.stdout  # tables drawn, none empty
    everything = kctl_in(cluster.dir, "topic", "describe", "plain", "--all-configs").stdout.decode()
    assert "CONFIGS\nKEY" in everything and "segment.bytes" in everything
    configs = json.loads(kctl_in(cluster.dir, "topic", "describe", "plain", "--json").stdout)["configs"]
    assert configs["segment.bytes"]["source"] == "default_config"  # --json lists defaults as before


def test_topic_admin_round_trip(cluster_factory):
    cluster = cluster_factory(1)
    created = json.loads(kctl_in(cluster.dir, "topic", "create", "t", "-p", "3", "--json").stdout)
    assert created == {"topic": "t", "status": "created"}
    kctl_in(cluster.dir, "topic", "create", "t", expect=ExitCode.ERROR)
    kctl_in(cluster.dir, "topic", "create", "t", "--if-not-exists")
    assert {"name": "t", "partitions": 3, "replication_factor": 1} in json.loads(
        kctl_in(cluster.dir, "topic", "list", "--json").stdout
    )

    kctl_in(cluster.dir, "topic", "alter-config", "t", "--set", "retention.ms=1234")
    configs = json.loads(kctl_in(cluster.dir, "topic", "describe", "t", "--json").stdout)["configs"]
    assert configs["retention.ms"] == {"value": "1234", "source": "dynamic_topic_config"}
    kctl_in(cluster.dir, "topic", "alter-config", "t", "--delete", "retention.ms")
    configs = json.loads(kctl_in(cluster.dir, "topic", "describe", "t", "--json").stdout)["configs"]
    assert configs["retention.ms"]["source"] != "dynamic_topic_config"

    kctl_in(cluster.dir, "topic", "delete", "t")
    wait_until(
        lambda: (
            run_kctl("topic", "describe", "t", env={"KCTL_HOME": str(cluster.dir)}).returncode
            == ExitCode.NOT_FOUND
        ),
        10,
        "the deletion to show",
    )
    kctl_in(cluster.dir, "topic", "delete", "t", expect=ExitCode.NOT_FOUND)


def test_offsets_by_timestamp(cluster_factory):
    cluster = cluster_factory(1)
    kctl_in(cluster.dir, "topic", "create", "events", "-p", "1")
    kctl_in(cluster.dir, "produce", "events", input=b"old\n")
    boundary = int(time.time() * 1000) + 1
    wait_until(lambda: time.time() * 1000 > boundary + 5, 1, "the clock to pass the boundary")
    kctl_in(cluster.dir, "produce", "events", input=b"new\n")

    def values(offset):
        return kctl_in(cluster.dir, "consume", "events", "-e", "-o", offset).stdout.split()

    assert values("@-1h") == [b"old", b"new"]
    assert values(f"@{boundary}") == [b"new"]
    assert values(f"@:{boundary}") == [b"old"]
    assert values(f"@{boundary + 3_600_000}") == []


def test_keyless_records_spread_over_every_partition(cluster_factory):
    cluster = cluster_factory(1)
    kctl_in(cluster.dir, "topic", "create", "spread", "-p", "3")
    kctl_in(cluster.dir, "produce", "spread", input=b"".join(b"%d\n" % i for i in range(300)))
    doc = json.loads(kctl_in(cluster.dir, "topic", "describe", "spread", "--json").stdout)
    counts = [p["high_watermark"] for p in doc["partitions"]]
    assert sum(counts) == 300 and min(counts) >= 50, counts  # random: ~100 each, sd ~8
