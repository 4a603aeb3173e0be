"""Scaling through the CLI on real brokerd daemons: `kctl topic add-partitions|reassign|
elect-leaders|segments` and `kctl cluster add-broker|remove-broker`. Replicas move by KIP-455
reassignment, so the tests check both where replicas end up (`topic describe`) and that no
acknowledged record is lost while they move."""

import json
import threading

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.local import BROKERS_ONLY, kctl_in, kctl_json
from tests.kctl.murmur2 import java_partition

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


def replicas(directory, topic) -> dict[int, list[int]]:
    return {
        p["partition"]: p["replicas"] for p in kctl_json(directory, "topic", "describe", topic)["partitions"]
    }


def consumed(directory, topic) -> list[str]:
    return kctl_in(directory, "consume", topic, "-o", "start", "-e").stdout.decode().splitlines()


def test_add_partitions_then_keyed_records_hash_over_the_new_count(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", "-n", "1", *BROKERS_ONLY)
    kctl_in(cluster_dir, "topic", "create", "orders", "-p", "2")
    kctl_in(cluster_dir, "topic", "add-partitions", "orders", "-p", "5")
    assert len(replicas(cluster_dir, "orders")) == 5
    keys = [f"k{i}" for i in range(40)]
    kctl_in(cluster_dir, "produce", "orders", "-K", ":", input="".join(f"{k}:v\n" for k in keys))
    placed = (
        kctl_in(cluster_dir, "consume", "orders", "-o", "start", "-e", "-f", "%k %p\\n")
        .stdout.decode()
        .split("\n")
    )
    assert {tuple(line.split()) for line in placed if line} == {
        (k, str(java_partition(k.encode(), 5))) for k in keys
    }
    smaller = kctl_in(
        cluster_dir, "topic", "add-partitions", "orders", "-p", "5", expect=ExitCode.INVALID_INPUT
    )
    assert smaller.stderr.count("\n") == 1 and "already has 5 partition(s)" in smaller.stderr
    kctl_in(cluster_dir, "topic", "add-partitions", "nope", "-p", "3", expect=ExitCode.NOT_FOUND)


def test_reassign_moves_partitions_by_flags_and_plan(cluster_dir, tmp_path):
    kctl_in(cluster_dir, "cluster", "up", *BROKERS_ONLY)
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "3", "-r", "2")
    for lines in (range(50), range(50, 100)):  # two produce runs: at least two batches a partition
        kctl_in(cluster_dir, "produce", "demo", "--acks", "all", input="".join(f"r{i}\n" for i in lines))
    before = replicas(cluster_dir, "demo")
    target = [next(b for b in (1, 2, 3) if b not in before[0]), before[0][0]]
    # At 100 B/s the new replica waits seconds after its first batch before it fetches the
    # next, so --wait is sure to see the move in progress (unthrottled it may be over first).
    kctl_in(cluster_dir, "broker", "throttle", str(target[0]), "--rate", "100")
    moved = kctl_in(
        cluster_dir,
        "topic",
        "reassign",
        "demo",
        "--partition",
        "0",
        "--replicas",
        ",".join(map(str, target)),
        "--wait",
    )
    assert "Reassignment complete." in moved.stderr and f"adding [{target[0]}]" in moved.stderr
    kctl_in(cluster_dir, "broker", "throttle", str(target[0]), "--off")
    assert replicas(cluster_dir, "demo")[0] == target
    assert kctl_json(cluster_dir, "topic", "reassign", "--list") == []

    # A whole plan in kafka-reassign-partitions.sh's format: partition 1 back to a new set.
    moved_back = [next(b for b in (1, 2, 3) if b not in before[1]), before[1][0]]
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "demo", "partition": 1, "replicas": moved_back}]})
    )
    kctl_in(cluster_dir, "topic", "reassign", "--plan", str(plan), "--wait")
    assert replicas(cluster_dir, "demo")[1] == moved_back
    refused = kctl_in(cluster_dir, "topic", "reassign", "demo", "--cancel", expect=ExitCode.CONFLICT)
    assert "no reassignment in progress for demo" in refused.stderr
    assert sorted(consumed(cluster_dir, "demo")) == sorted(f"r{i}" for i in range(100))


def test_reassign_and_elect_usage_errors(cluster_dir, tmp_path):
    kctl_in(cluster_dir, "cluster", "up", "-n", "1", *BROKERS_ONLY)
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "1")
    kctl_in(cluster_dir, "topic", "reassign", "demo", "--partition", "0", expect=ExitCode.USAGE)
    kctl_in(cluster_dir, "topic", "reassign", expect=ExitCode.USAGE)
    kctl_in(
        cluster_dir,
        "topic",
        "reassign",
        "demo",
        "--partition",
        "0",
        "--replicas",
        "1,x",
        expect=ExitCode.INVALID_INPUT,
    )
    kctl_in(
        cluster_dir,
        "topic",
        "reassign",
        "demo",
        "--partition",
        "0",
        "--replicas",
        "1,1",
        expect=ExitCode.INVALID_INPUT,
    )
    kctl_in(
        cluster_dir,
        "topic",
        "reassign",
        "nope",
        "--partition",
        "0",
        "--replicas",
        "1",
        expect=ExitCode.NOT_FOUND,
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"partitions": [{"topic": "demo"}]}')
    kctl_in(cluster_dir, "topic", "reassign", "--plan", str(bad), expect=ExitCode.INVALID_INPUT)
    elected = kctl_in(cluster_dir, "topic", "elect-leaders", "demo")
    assert b"already led by its preferred leader" in elected.stdout
    kctl_in(cluster_dir, "topic", "elect-leaders", "nope", expect=ExitCode.NOT_FOUND)


def test_segments_show_each_replica_on_disk(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", "-n", "2", *BROKERS_ONLY)
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "2", "-r", "2")
    kctl_in(
        cluster_dir,
        "produce",
        "demo",
        "-p",
        "1",
        "--acks",
        "all",
        input="".join(f"r{i}\n" for i in range(50)),
    )
    rows = wait_until(
        lambda: (lambda r: r if all(x["next_offset"] == 50 for x in r) else None)(
            kctl_json(cluster_dir, "topic", "segments", "demo", "-p", "1")
        ),
        20,
        "both replicas of partition 1",
    )
    assert sorted(r["broker"] for r in rows) == [1, 2]
    assert all(r["base_offset"] == 0 and 0 < r["log_bytes"] <= r["log_file_bytes"] for r in rows)
    assert all(r["index_file_bytes"] is not None and r["timeindex_file_bytes"] is not None for r in rows)
    assert {r["partition"] for r in kctl_json(cluster_dir, "topic", "segments", "demo")} == {0, 1}
    kctl_in(cluster_dir, "topic", "segments", "nope", expect=ExitCode.NOT_FOUND)


def produce_in_background(directory, topic, count):
    """`kctl produce --acks all` of `count` lines in a thread; returns the thread and its result."""
    outcome = {}

    def run():
        outcome["result"] = kctl_in(
            directory, "produce", topic, "--acks", "all", input="".join(f"{i}\n" for i in range(count))
        )

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_add_broker_rebalance_while_producing_loses_nothing(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", *BROKERS_ONLY)
    kctl_in(cluster_dir, "topic", "create", "load", "-p", "4", "-r", "2", "-c", "min.insync.replicas=2")
    thread, outcome = produce_in_background(cluster_dir, "load", 20000)
    added = kctl_in(cluster_dir, "cluster", "add-broker", "--rebalance")
    thread.join(120)
    assert "Started broker 4" in added.stderr and "Rebalanced" in added.stderr
    assert outcome["result"].returncode == 0
    held = [r for rs in replicas(cluster_dir, "load").values() for r in rs]
    assert 4 in held and all(len(rs) == 2 for rs in replicas(cluster_dir, "load").values())
    assert max(held.count(b) for b in (1, 2, 3, 4)) == 2  # 8 replicas, 2 per broker
    assert sorted(consumed(cluster_dir, "load"), key=int) == [str(i) for i in range(20000)]
    assert [b["id"] for b in kctl_json(cluster_dir, "broker", "list")["brokers"]] == [1, 2, 3, 4]


def test_remove_broker_drains_it_and_keeps_every_record(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", *BROKERS_ONLY)
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "3", "-r", "2")
    kctl_in(cluster_dir, "produce", "demo", "--acks", "all", input="".join(f"{i}\n" for i in range(3000)))
    kctl_in(cluster_dir, "cluster", "remove-broker", "2")
    assert all(2 not in rs and len(rs) == 2 for rs in replicas(cluster_dir, "demo").values())
    assert [b["id"] for b in kctl_json(cluster_dir, "broker", "list")["brokers"]] == [1, 3]
    kctl_in(cluster_dir, "cluster", "status")  # healthy: 2 is no longer planned
    assert sorted(consumed(cluster_dir, "demo"), key=int) == [str(i) for i in range(3000)]
    kctl_in(cluster_dir, "cluster", "remove-broker", "9", expect=ExitCode.NOT_FOUND)
    refused = kctl_in(cluster_dir, "cluster", "remove-broker", "1", expect=ExitCode.CONFLICT)
    assert "replication factor 2" in refused.stderr
    assert [b["id"] for b in kctl_json(cluster_dir, "broker", "list")["brokers"]] == [1, 3]


def test_scaling_needs_a_local_cluster(isolated_env, tmp_path):
    kctl_in(tmp_path / "none", "cluster", "add-broker", expect=ExitCode.UNREACHABLE)
    kctl_in(tmp_path / "none", "cluster", "remove-broker", "1", expect=ExitCode.UNREACHABLE)
    kctl_in(tmp_path / "none", "topic", "segments", "demo", expect=ExitCode.UNREACHABLE)
