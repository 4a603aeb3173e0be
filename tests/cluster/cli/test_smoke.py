"""One quick end-to-end test per kctl command, for `scripts/test --quick`.

Every test runs the real CLI as a process against one cluster of three real brokers that
`kctl cluster up` starts once for the module; each test works on a topic (or group, user)
of its own, and a test that breaks brokers brings them back before it ends. Each asserts
what a user reads the command for, not only that it ran. The full behaviour of each
command is tested in its own module; this one catches a command that no longer works at
all in seconds.

The cluster runs Kafka's StandardAuthorizer with the (PLAINTEXT) ANONYMOUS principal as super
user, as a plaintext Kafka with ACLs does: every client may do anything, and `kctl acl` has
an authorizer to keep its bindings in.
"""

from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from brokerd.state import ClusterState
from kctl.learn import catalogue
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import kctl_in, kctl_json, kill_leftovers

pytestmark = [pytest.mark.cluster, pytest.mark.smoke, pytest.mark.timeout(120)]

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ORDERS = [("alice", "1"), ("bob", "1"), ("alice", "2"), ("carol", "1"), ("bob", "2"), ("alice", "3")]


@dataclass(frozen=True)
class SmokeCluster:
    dir: Path
    up: str  # what `kctl cluster up` printed
    orders: str  # a 2-partition topic holding ORDERS (key:value lines), written by kctl produce


def fresh(prefix: str) -> str:
    """A name no other test uses, so tests on the shared cluster do not see each other."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmokeCluster]:
    """Three brokers for the whole module, stopped at the end whatever the tests did; no
    KCTL_BOOTSTRAP or KCTL_TIMEOUT from the developer's shell reaches the commands."""
    directory = tmp_path_factory.mktemp("smoke") / "cluster"
    with pytest.MonkeyPatch.context() as env:
        for var in ("KCTL_BOOTSTRAP", "KCTL_TIMEOUT", "KCTL_COMMAND_CONFIG"):
            env.delenv(var, raising=False)
        try:
            up = kctl_in(
                directory,
                "cluster",
                "up",
                "--brokers",
                "3",
                "-o",
                f"authorizer.class.name={AUTHORIZER}",
                "-o",
                "super.users=User:ANONYMOUS",
            )
            orders = fresh("orders")
            kctl_in(directory, "topic", "create", orders, "-p", "2")
            lines = "".join(f"{key}:{value}\n" for key, value in ORDERS)
            kctl_in(directory, "produce", orders, "-K", ":", input=lines)
            yield SmokeCluster(directory, up.stdout.decode(), orders)
        finally:
            run_kctl("cluster", "down", env={"KCTL_HOME": str(directory)})
            kill_leftovers(directory)


def by_key(lines: list[str]) -> dict[str, list[str]]:
    """key=value lines grouped by key, in the order they came."""
    grouped: dict[str, list[str]] = {}
    for line in lines:
        key, value = line.split("=", 1)
        grouped.setdefault(key, []).append(value)
    return grouped


def expected_by_key() -> dict[str, list[str]]:
    return by_key([f"{key}={value}" for key, value in ORDERS])


def test_produce_acknowledges_each_record_at_its_offset(cluster):
    topic = fresh("produce")
    kctl_in(cluster.dir, "topic", "create", topic, "-p", "3")
    lines = "".join(f"{key}:{value}\n" for key, value in ORDERS)
    result = kctl_in(cluster.dir, "produce", topic, "-K", ":", "--json", input=lines)
    reports = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert len(reports) == len(ORDERS) and all(r["error"] is None and r["topic"] == topic for r in reports)
    for p in {r["partition"] for r in reports}:
        offsets = [r["offset"] for r in reports if r["partition"] == p]
        assert offsets == list(range(len(offsets)))  # appended in order, from offset 0
    assert f"{len(ORDERS)} records produced to {topic}, 0 failed" in result.stderr


def test_consume_reads_back_every_record_in_order_per_key(cluster):
    result = kctl_in(cluster.dir, "consume", cluster.orders, "-e", "-f", "%p %o %k=%v\\n")
    rows = [line.split(" ", 2) for line in result.stdout.decode().splitlines()]
    assert len(rows) == len(ORDERS)
    assert by_key([row[2] for row in rows]) == expected_by_key()
    homes = {key: {row[0] for row in rows if row[2].startswith(f"{key}=")} for key, _ in ORDERS}
    assert all(len(home) == 1 for home in homes.values()), homes  # one key, one partition
    for p in {row[0] for row in rows}:
        offsets = [int(row[1]) for row in rows if row[0] == p]
        assert offsets == list(range(len(offsets)))
    assert f"Processed a total of {len(ORDERS)} messages" in result.stderr


def test_watch_shows_the_partitions_and_brokers_as_they_are(cluster):
    snap = kctl_json(cluster.dir, "watch", cluster.orders, "--once")
    assert {b["id"]: b["state"] for b in snap["brokers"]} == {1: "alive", 2: "alive", 3: "alive"}
    assert snap["controller"]["broker_id"] in (1, 2, 3)
    [topic] = snap["topics"]
    assert topic["topic"] == cluster.orders
    parts = topic["partitions"]
    assert [p["partition"] for p in parts] == [0, 1]
    assert sum(p["high_watermark"] for p in parts) == len(ORDERS)
    assert all(sorted(p["isr"]) == [1, 2, 3] and p["leader"] in p["replicas"] for p in parts)


def test_report_draws_a_watch_recording(cluster, tmp_path):
    recording = tmp_path / "watch.jsonl"
    kctl_in(cluster.dir, "watch", cluster.orders, "--record", str(recording), "--duration", "1s")
    svg, html = tmp_path / "timeline.svg", tmp_path / "timeline.html"
    kctl_in(cluster.dir, "report", str(recording), "--svg", str(svg), "--html", str(html))
    texts = "".join(ET.parse(svg).getroot().itertext())
    assert f"{cluster.orders}/0" in texts and f"{cluster.orders}/1" in texts
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lstrip().lower().startswith("<!doctype html>")
    assert "<svg" in page and cluster.orders in page


def test_sql_refuses_a_bad_target_topic_before_spark_starts(cluster):
    """The JVM takes tens of seconds to start: what is checked before it (the cluster
    answers, the --to topic is a legal name) is the quick path."""
    result = run_kctl(
        "sql", f"SELECT * FROM {cluster.orders}", "--to", "no spaces", env={"KCTL_HOME": str(cluster.dir)}
    )
    assert result.returncode == ExitCode.INVALID_INPUT, result.stderr
    assert (
        result.stderr.strip() == "kctl: error: invalid topic name 'no spaces': use 1-249 of a-z A-Z 0-9 . _ -"
    )


def test_cluster_up_status_metadata_and_a_broker_added_then_removed(cluster):
    lines = cluster.up.splitlines()
    assert [line.split()[3] for line in lines[1:4]] == ["started"] * 3
    ports = ClusterState(cluster.dir).planned_brokers()
    assert lines[-1] == "export KCTL_BOOTSTRAP=" + ",".join(f"127.0.1.{i}:{p}" for i, p in ports.items())

    added = kctl_in(cluster.dir, "cluster", "add-broker")
    assert "Started broker 4 on port" in added.stdout.decode() + added.stderr
    status = kctl_json(cluster.dir, "cluster", "status")
    assert status["healthy"] and status["controller"]["broker_id"] in (1, 2, 3, 4)
    assert {b["id"]: b["state"] for b in status["brokers"]} == {i: "alive" for i in (1, 2, 3, 4)}
    removed = kctl_in(cluster.dir, "cluster", "remove-broker", "4")
    assert "Removed broker 4" in removed.stdout.decode() + removed.stderr
    assert set(ClusterState(cluster.dir).planned_brokers()) == {1, 2, 3}

    metadata = kctl_in(cluster.dir, "cluster", "metadata").stdout.decode()
    assert f"TopicRecord {cluster.orders} id" in metadata and "2 partitions to come" in metadata
    assert f"PartitionRecord {cluster.orders}/1 replicas" in metadata


def whole_again(directory: Path) -> bool:
    """Every broker alive and every partition's ISR all of its replicas, as the state
    directory tells it: what the tests after a fault need to find."""
    state = ClusterState(directory)
    alive = all(state.is_alive(broker_id) for broker_id in state.planned_brokers())
    return alive and all(
        sorted(p.isr) == sorted(p.replicas) for t in state.topics().values() for p in t.partitions.values()
    )


def test_broker_faults_show_in_the_list_and_heal(cluster):
    env = {"KCTL_HOME": str(cluster.dir)}
    try:
        kctl_in(cluster.dir, "broker", "pause", "2")
        kctl_in(cluster.dir, "broker", "kill", "3")
        kctl_in(cluster.dir, "broker", "throttle", "1", "--rate", "64KB/s")
        # paused is what kctl reports once the frozen broker's lease has run out (its session
        # timeout), which the three commands above may take less time than
        listed = wait_until(
            lambda: (
                (found := kctl_json(cluster.dir, "broker", "list"))
                and found["brokers"][1]["state"] != "alive"
                and found
            ),
            10,
            "broker 2's lease to run out",
        )
        assert {b["id"]: b["state"] for b in listed["brokers"]} == {1: "alive", 2: "paused", 3: "dead"}
        assert listed["brokers"][0]["replication_throttle_bytes_per_s"] == 64000
    finally:
        resumed = run_kctl("broker", "resume", "2", env=env)
        started = run_kctl("broker", "start", "3", env=env)
        unthrottled = run_kctl("broker", "throttle", "1", "--off", env=env)
    assert [r.returncode for r in (resumed, started, unthrottled)] == [0, 0, 0], started.stderr
    wait_until(lambda: whole_again(cluster.dir), 30, "every broker back and every replica in sync")


def test_topic_create_configure_grow_trim_and_delete(cluster):
    topic = fresh("topic")
    kctl_in(cluster.dir, "topic", "create", topic, "-p", "1", "-c", "retention.ms=3600000")
    kctl_in(cluster.dir, "produce", topic, input="a\nb\nc\n")
    kctl_in(cluster.dir, "topic", "alter-config", topic, "-s", "max.message.bytes=2048")
    kctl_in(cluster.dir, "topic", "add-partitions", topic, "-p", "3")
    trimmed = kctl_json(cluster.dir, "topic", "delete-records", topic, "--offset", "1", "-p", "0")
    assert trimmed == [{"topic": topic, "partition": 0, "low_watermark": 1}]

    listed = kctl_in(cluster.dir, "topic", "list").stdout.decode().splitlines()
    assert [topic, "3", "3"] in [line.split() for line in listed]
    doc = kctl_json(cluster.dir, "topic", "describe", topic)
    assert [p["partition"] for p in doc["partitions"]] == [0, 1, 2]
    first = doc["partitions"][0]
    assert (first["log_start_offset"], first["high_watermark"]) == (1, 3)
    assert doc["configs"]["retention.ms"]["value"] == "3600000"
    assert doc["configs"]["max.message.bytes"]["value"] == "2048"

    kctl_in(cluster.dir, "topic", "delete", topic)
    assert topic not in ClusterState(cluster.dir).topics()


def test_group_commits_offsets_that_describe_shows_and_reset_moves(cluster):
    group = fresh("group")
    read = kctl_in(cluster.dir, "consume", cluster.orders, "-g", group, "-n", "4", "-q")
    assert len(read.stdout.decode().splitlines()) == 4
    doc = kctl_json(cluster.dir, "group", "describe", group)
    assert doc["state"] == "Empty" and doc["members"] == []
    assert sum(p["committed_offset"] for p in doc["partitions"]) == 4
    assert doc["total_lag"] == len(ORDERS) - 4

    reset = kctl_json(cluster.dir, "group", "reset-offsets", group, "--to-earliest", "--execute")
    assert reset["executed"] and {p["new_offset"] for p in reset["partitions"]} == {0}
    kctl_in(cluster.dir, "group", "delete", group)
    assert group not in [g["group"] for g in kctl_json(cluster.dir, "group", "list")]


def test_user_create_list_delete(cluster):
    user = fresh("user")
    kctl_in(cluster.dir, "user", "create", user, "--password", "secret", "-m", "scram-sha-256")
    listed = {u["user"]: u["credentials"] for u in kctl_json(cluster.dir, "user", "list")}
    assert listed[user] == [{"mechanism": "SCRAM-SHA-256", "iterations": 4096}]
    kctl_in(cluster.dir, "user", "delete", user)
    assert user not in ClusterState(cluster.dir).scram_credentials()


def test_acl_create_explain_list_delete(cluster):
    user, topic = fresh("reader"), fresh("acl")
    principal = f"User:{user}"
    kctl_in(
        cluster.dir, "acl", "create", "--allow-principal", principal, "--operation", "read", "--topic", topic
    )
    allowed = kctl_in(
        cluster.dir, "acl", "explain", "--principal", principal, "--operation", "read", "--topic", topic
    ).stdout.decode()
    assert allowed.startswith(f"ALLOWED: {principal} READ on TOPIC:{topic}"), allowed
    assert "rule:" in allowed and "ALLOW" in allowed.split("rule:", 1)[1]
    listed = kctl_json(cluster.dir, "acl", "list", "--principal", principal)
    assert len(listed) == 1 and listed[0]["operation"].lower() == "read", listed
    kctl_in(cluster.dir, "acl", "delete", "--principal", principal)
    assert not [b for b in ClusterState(cluster.dir).acl_bindings() if principal in json.dumps(b)]


def test_quota_alter_then_describe(cluster):
    user = fresh("quota")
    kctl_in(
        cluster.dir,
        "quota",
        "alter",
        "--user",
        user,
        "--add",
        "producer_byte_rate=1024,consumer_byte_rate=2048",
    )
    described = kctl_json(cluster.dir, "quota", "describe", "--user", user)
    assert described == [{"user": user, "values": {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}}]


def test_bench_produce_then_consume_counts_every_record(cluster):
    topic = fresh("bench")
    produced = kctl_json(cluster.dir, "bench", "produce", "-t", topic, "--records", "2000", "-p", "2")
    assert produced["records"] == 2000 and produced["failed"] == 0 and produced["records_per_s"] > 0
    consumed = kctl_json(cluster.dir, "bench", "consume", "-t", topic)
    assert consumed["records"] == 2000 and consumed["mb_per_s"] > 0


def test_verify_a_short_run_without_faults_is_valid_and_checked_again(cluster, tmp_path):
    history = tmp_path / "history.jsonl"
    run = kctl_json(
        cluster.dir,
        "verify",
        "--no-faults",
        "--time-limit",
        "1s",
        "-p",
        "1",
        "--producers",
        "1",
        "--consumers",
        "1",
        "--history",
        str(history),
    )
    assert run["valid"] and run["anomalies"] == 0, run
    assert run["stats"]["acknowledged"] > 0 and run["stats"]["final_read"] == run["stats"]["acknowledged"]
    assert kctl_json(cluster.dir, "verify", "check", str(history)) == run


def test_learn_lists_the_lessons_and_names_them_for_an_unknown_one(tmp_path):
    env = {"KCTL_HOME": str(tmp_path)}
    listed = run_kctl("learn", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert [row["name"] for row in doc["lessons"]] == [lesson.name for lesson in catalogue.LESSONS]
    unknown = run_kctl("learn", "run", "no-such-lesson", env=env)
    assert unknown.returncode == ExitCode.NOT_FOUND, unknown.stderr
    assert "the lessons are: partitions, offsets" in unknown.stderr
