"""kctl's client side through the real CLI against librdkafka's mock cluster.

The mock cluster is a Kafka implementation kctl did not write; it creates a topic, with 4
partitions, the first time a producer asks for it. It has no controller, so topic creation
and config calls are not exercised here (the real-broker tests cover them).
"""

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from kctl.main import app
from kctl.shell.exit_codes import ExitCode
from tests.kctl.cli import kctl_command, kctl_env, run_kctl
from tests.kctl.murmur2 import java_partition

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(60)]
MOCK_PARTITIONS = 4


@dataclass
class Result:
    stdout: bytes
    stderr: str


@pytest.fixture
def kctl(mock_bootstrap, isolated_env):
    """The kctl CLI in-process (Typer's CliRunner, fast) against the mock cluster; fails the
    test on an unexpected exit code. Signals, pipes and timing use real processes below."""

    def run(*args, input=None, expect=0):
        result = CliRunner().invoke(app, [*args, "-b", mock_bootstrap], input=input, env=isolated_env)
        assert result.exit_code == expect, (result.stderr, result.exception)
        return Result(result.stdout_bytes, result.stderr)

    return run


def consumed(kctl, topic, *args):
    return kctl("consume", topic, "-e", "-f", "%p %o %k %v\\n", *args).stdout.decode().splitlines()


def test_lines_come_back_in_order_per_partition(kctl, topic):
    lines = [f"record-{i}" for i in range(500)]
    result = kctl("produce", topic, input="\n".join(lines) + "\n")
    assert "500 records produced to " + topic + ", 0 failed" in result.stderr
    out = kctl("consume", topic, "-e", "-f", "%p %o %v\\n")
    assert out.stderr.strip() == "Processed a total of 500 messages"
    rows = [row.split(" ") for row in out.stdout.decode().splitlines()]
    assert sorted(value for *_, value in rows) == sorted(lines)
    for partition in {p for p, *_ in rows}:
        offsets = [int(o) for p, o, _ in rows if p == partition]
        values = [v for p, _, v in rows if p == partition]
        assert offsets == list(range(len(offsets)))  # in order, no gaps
        assert values == [v for v in lines if v in set(values)]  # in input order


def test_same_key_same_partition_as_kafkas_java_client(kctl, topic):
    keys = [f"user-{i}" for i in range(40)]
    kctl("produce", topic, "-K", ":", input="".join(f"{k}:a\n{k}:b\n" for k in keys * 2))
    placement = {}
    for partition, _, key, _ in (row.split(" ") for row in consumed(kctl, topic)):
        placement.setdefault(key, set()).add(int(partition))
    assert set(placement) == set(keys)
    for key, partitions in placement.items():
        assert partitions == {java_partition(key.encode(), MOCK_PARTITIONS)}, key


def test_fixed_key_headers_and_explicit_partition(kctl, topic):
    kctl("produce", topic, "-k", "K", "-H", "a=1", "-H", "b=x=y", "-p", "3", input="v1\nv2\n")
    rows = consumed(kctl, topic, "-f", "%p|%k|%v|%h\\n")
    assert rows == ["3|K|v1|a=1,b=x=y", "3|K|v2|a=1,b=x=y"]


def test_json_delivery_reports_one_per_record(kctl, topic):
    result = kctl("produce", topic, "--json", "-p", "1", input="a\nb\nc\n")
    reports = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert reports == [{"topic": topic, "partition": 1, "offset": i, "error": None} for i in range(3)]


def test_binary_input_round_trips(kctl, topic):
    payload = bytes(b for b in range(256) if b != 0x0A)
    kctl("produce", topic, "-p", "0", input=payload + b"\n" + b"\x00\xff\n")
    out = kctl("consume", topic, "-e", "-f", "%v\\n", "-p", "0").stdout
    assert out == payload + b"\n" + b"\x00\xff\n"


def test_json_records(kctl, topic):
    kctl("produce", topic, "-K", "=", "-p", "2", "-H", "h=v", input="k=v\n")
    (line,) = kctl("consume", topic, "-e", "--json").stdout.decode().splitlines()
    doc = json.loads(line)
    assert {k: doc[k] for k in ("topic", "partition", "offset", "key", "value", "headers")} == {
        "topic": topic,
        "partition": 2,
        "offset": 0,
        "key": "k",
        "value": "v",
        "headers": [{"key": "h", "value": "v"}],
    }
    assert abs(doc["timestamp"] - time.time() * 1000) < 60_000


def test_offsets_counts_and_partitions(kctl, topic):
    kctl("produce", topic, "-p", "0", input="".join(f"{i}\n" for i in range(10)))
    kctl("produce", topic, "-p", "1", input="".join(f"{i}\n" for i in range(10, 15)))

    def values(*args):
        return kctl("consume", topic, "-e", "-f", "%v ", *args).stdout.decode().split()

    assert values("-p", "0", "-o", "-3") == ["7", "8", "9"]
    assert values("-p", "0", "-o", "+8") == ["8", "9"]
    assert values("-p", "0", "-o", "2:5") == ["2", "3", "4"]
    assert values("-p", "1", "-o", "end") == []
    assert sorted(values("-p", "0,1", "-o", "-1")) == ["14", "9"]
    assert sorted(values("-p", "0", "-p", "1", "-o", "-1")) == ["14", "9"]
    assert len(values("-n", "4")) == 4


def test_a_bounded_range_exits_by_itself(kctl, topic):
    kctl("produce", topic, "-p", "0", input="a\nb\nc\n")
    assert kctl("consume", topic, "-o", ":2", "-p", "0").stdout == b"a\nb\n"  # no -e needed
    assert kctl("consume", topic, "-o", "1:end", "-p", "0").stdout == b"b\nc\n"


def test_unknown_topic_and_partition_exit_4(kctl, topic):
    assert "unknown topic" in kctl("consume", "no-such-topic-x", "-e", expect=ExitCode.NOT_FOUND).stderr
    kctl("produce", topic, input="x\n")
    kctl("consume", topic, "-p", "9", expect=ExitCode.NOT_FOUND)
    kctl("produce", topic, "-p", "9", input="x\n", expect=ExitCode.NOT_FOUND)


def test_record_too_large_fails_the_run(kctl, topic):
    big = b"x" * 2_000_000 + b"\n"
    result = kctl("produce", topic, input=b"small\n" + big, expect=ExitCode.INVALID_INPUT)
    assert "1 record produced to " + topic + ", 1 failed" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("kctl: error: delivery failed")


def test_topic_list(kctl, topic):
    kctl("produce", topic, input="x\n")
    listed = json.loads(kctl("topic", "list", "--json").stdout)
    assert {"name": topic, "partitions": MOCK_PARTITIONS, "replication_factor": 3} in listed
    assert topic in kctl("topic", "list").stdout.decode()


def test_topic_describe_against_a_foreign_cluster(kctl, mock_bootstrap, topic):
    kctl("produce", topic, "-p", "2", input="a\nb\n")
    result = run_kctl(
        "topic",
        "describe",
        topic,
        "--json",
        "--timeout",
        "1",
        "-b",
        mock_bootstrap,
        env={"KCTL_HOME": os.devnull},
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    part = doc["partitions"][2]
    assert set(part) == {
        "partition",
        "leader",
        "leader_epoch",
        "replicas",
        "isr",
        "log_start_offset",
        "last_stable_offset",
        "high_watermark",
        "log_end_offsets",
        "open_transactions",
    }
    assert (part["log_start_offset"], part["last_stable_offset"], part["high_watermark"]) == (0, 2, 2)
    assert part["log_end_offsets"] == {str(part["leader"]): 2}  # only the leader's end is known
    assert part["open_transactions"] is None  # unknown outside the local cluster
    assert doc["configs"] is None and "configs of" in result.stderr  # the mock has no controller


def test_bench_produce_and_consume_print_figures(kctl, topic):
    kctl("produce", topic, input="seed\n")  # the mock creates topics on first produce only
    produced = kctl(
        "bench",
        "produce",
        "-t",
        topic,
        "--records",
        "5000",
        "--record-size",
        "64",
        "--linger-ms",
        "1",
        "--batch-size",
        "65536",
        "--compression",
        "lz4",
    ).stdout.decode()
    assert produced.startswith("5000 records sent, ") and "ms 99th" in produced
    figures = json.loads(kctl("bench", "produce", "-t", topic, "--records", "1000", "--json").stdout)
    assert figures["records"] == 1000 and figures["failed"] == 0 and figures["records_per_s"] > 0
    assert 0 <= figures["latency_ms"]["p50"] <= figures["latency_ms"]["p99"] <= figures["latency_ms"]["max"]
    consumed_json = json.loads(kctl("bench", "consume", "-t", topic, "--json").stdout)
    assert consumed_json["records"] == 6001 and consumed_json["mb_per_s"] > 0
    assert kctl("bench", "consume", "-t", topic, "--records", "100").stdout.startswith(
        b"100 records received"
    )


def test_follow_mode_stops_cleanly_on_ctrl_c(mock_bootstrap, isolated_env, topic):
    run_kctl("produce", topic, "-p", "0", "-b", mock_bootstrap, input="first\n", env=isolated_env)
    proc = subprocess.Popen(
        kctl_command("consume", topic, "-b", mock_bootstrap),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=kctl_env(isolated_env),
    )
    try:
        assert proc.stdout.readline() == b"first\n"  # it is reading, and follows
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.INTERRUPTED
    assert "Processed a total of 1 messages" in err.decode() and "Traceback" not in err.decode()


def test_produce_reports_and_exits_130_on_ctrl_c(mock_bootstrap, isolated_env, topic):
    proc = subprocess.Popen(
        kctl_command("produce", topic, "--json", "-b", mock_bootstrap),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=kctl_env(isolated_env),
    )
    try:
        proc.stdin.write(b"one\ntwo\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["error"] is None  # delivered while stdin is open
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.INTERRUPTED
    assert f"2 records produced to {topic}, 0 failed" in err.decode()
    assert "Traceback" not in err.decode()


def test_closed_stdout_exits_like_sigpipe(mock_bootstrap, isolated_env, topic):
    run_kctl("produce", topic, "-p", "0", "-b", mock_bootstrap, input="x\n" * 5000, env=isolated_env)
    proc = subprocess.Popen(
        kctl_command("consume", topic, "-b", mock_bootstrap),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=kctl_env(isolated_env),
    )
    try:
        proc.stdout.readline()
        proc.stdout.close()
        # consume may have written every record into the pipe already: give it a new one to
        # write, into the closed pipe
        run_kctl("produce", topic, "-p", "0", "-b", mock_bootstrap, input="y\n", env=isolated_env)
        err = proc.stderr.read().decode()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.BROKEN_PIPE and "Traceback" not in err
