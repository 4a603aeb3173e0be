"""Transactions through the CLI: `kctl produce --transactional-id` against real brokerd and
librdkafka's mock cluster, what `kctl consume --isolation` shows of committed, aborted and
open transactions, the LSO and open transactions in `topic describe` and `watch`, and fencing.

The mock cluster runs transactions but keeps no aborted-transaction index (read_committed
readers see aborted records there), so what aborts hide is asserted against brokerd only.
"""

import json
import os
import signal

import pytest

from kctl.produce import linebatches
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import kctl_in, kctl_json

pytestmark = pytest.mark.timeout(120)


def lines(n, prefix="r"):
    return "".join(f"{prefix}{i}\n" for i in range(n))


def values(directory, topic, *args):
    return kctl_in(directory, "consume", topic, "-e", "-q", *args).stdout.decode().split()


def delivered(process, n):
    """Wait for n JSON delivery reports: the records are in the log, their transaction open."""
    process.wait_for(lambda: len(process.out) >= n, f"{n} delivery reports")
    return [json.loads(line) for line in process.out[:n]]


@pytest.mark.cluster
@pytest.mark.interop
def test_commits_every_txn_size_records_and_the_rest_at_the_end(mock_bootstrap, isolated_env, topic):
    def kctl(*args, **kwargs):
        return run_kctl(*args, "-b", mock_bootstrap, env=isolated_env, **kwargs)

    produced = kctl(
        "produce", topic, "--transactional-id", f"{topic}-a", "--txn-size", "10", "-p", "0", input=lines(25)
    )
    assert produced.returncode == 0, produced.stderr
    assert produced.stderr.strip() == (
        f"25 records produced to {topic}, 0 failed; 3 transactions committed (25 records), 0 aborted"
    )
    at_once = kctl("produce", topic, "--transactional-id", f"{topic}-a", "-p", "0", input=lines(300, "s"))
    assert "1 transaction committed (300 records), 0 aborted" in at_once.stderr  # one pipe's worth
    consumed = kctl("consume", topic, "-e", "-q", "-p", "0")
    assert consumed.stdout.decode().split() == lines(25).split() + lines(300, "s").split()

    bench = json.loads(
        kctl(
            "bench",
            "produce",
            "-t",
            topic,
            "--records",
            "2500",
            "--transactional-id",
            f"{topic}-b",
            "--txn-size",
            "1000",
            "--json",
        ).stdout
    )
    assert bench["records"] == 2500 and bench["failed"] == 0 and bench["transactions"] == 3


@pytest.mark.unit
def test_ready_input_makes_one_transaction_and_a_split_line_waits_for_its_end():
    read_fd, write_fd = os.pipe()
    with open(read_fd, "rb") as stream:
        batches = linebatches.ready(stream)
        os.write(write_fd, b"a\nb")
        assert next(batches) == [b"a"]
        os.write(write_fd, b"\nc\nd\n")
        assert next(batches) == [b"b", b"c", b"d"]
        os.write(write_fd, b"last")
        os.close(write_fd)
        assert list(batches) == [[b"last"]]


@pytest.mark.unit
def test_ready_input_is_cut_at_the_limit_without_splitting_lines(tmp_path):
    records = [b"%07d" % i for i in range(100_000)]
    (tmp_path / "in").write_bytes(b"\n".join(records) + b"\n")
    with open(tmp_path / "in", "rb") as stream:
        batches = list(linebatches.ready(stream, limit=200_000))
    assert [line for batch in batches for line in batch] == records
    assert len(batches) == 4 and all(len(b) * 8 >= 200_000 for b in batches[:-1])


@pytest.mark.cluster
def test_committed_aborted_and_open_transactions(cluster, kctl_processes):
    kctl_in(cluster.dir, "topic", "create", "t", "-p", "1")
    kctl_in(cluster.dir, "produce", "t", "--transactional-id", "a", input="c1\nc2\n")
    open_txn = kctl_processes(
        cluster.dir, "produce", "t", "--transactional-id", "b", "--txn-size", "100", "--json"
    )
    open_txn.write(b"u1\nu2\n")
    first = delivered(open_txn, 2)[0]["offset"]

    part = kctl_json(cluster.dir, "topic", "describe", "t")["partitions"][0]
    assert (part["last_stable_offset"], part["high_watermark"]) == (first, first + 2)
    assert [t["first_offset"] for t in part["open_transactions"]] == [first]
    assert values(cluster.dir, "t") == ["c1", "c2"]  # -e stops at the LSO
    assert values(cluster.dir, "t", "--isolation", "read_uncommitted") == ["c1", "c2", "u1", "u2"]
    watched = wait_until(
        lambda: kctl_json(cluster.dir, "watch", "t", "--once")["topics"][0]["partitions"][0][
            "open_transactions"
        ],
        10,
        "the leader to publish the open transaction",
    )
    assert watched == part["open_transactions"]

    open_txn.proc.send_signal(signal.SIGINT)
    assert open_txn.finish() == ExitCode.INTERRUPTED
    assert (
        open_txn.err[-1]
        == "2 records produced to t, 0 failed; 0 transactions committed (0 records), 1 aborted"
    )
    kctl_in(cluster.dir, "produce", "t", "--transactional-id", "a", input="c3\n")
    assert values(cluster.dir, "t") == ["c1", "c2", "c3"]
    assert values(cluster.dir, "t", "--isolation", "read_uncommitted") == ["c1", "c2", "u1", "u2", "c3"]
    group = kctl_in(cluster.dir, "consume", "t", "-g", "g", "-n", "3", "-q").stdout.decode().split()
    assert group == ["c1", "c2", "c3"]
    part = kctl_json(cluster.dir, "topic", "describe", "t")["partitions"][0]
    assert part["last_stable_offset"] == part["high_watermark"] and part["open_transactions"] == []


@pytest.mark.cluster
def test_a_refused_record_aborts_its_transaction(cluster):
    kctl_in(cluster.dir, "topic", "create", "big", "-p", "1")
    result = kctl_in(
        cluster.dir,
        "produce",
        "big",
        "--transactional-id",
        "x",
        "--txn-size",
        "10",
        input=b"ok\n" + b"x" * 2_000_000 + b"\nnever\n",
        expect=ExitCode.INVALID_INPUT,
    )
    summary, error = result.stderr.strip().splitlines()
    assert summary.endswith("0 transactions committed (0 records), 1 aborted")
    assert error.startswith("kctl: error: ") and "too large" in error
    assert values(cluster.dir, "big") == []


@pytest.mark.cluster
def test_a_fenced_producer_stops_with_exit_6(cluster, kctl_processes):
    kctl_in(cluster.dir, "topic", "create", "f", "-p", "1")
    old = kctl_processes(
        cluster.dir, "produce", "f", "--transactional-id", "same", "--txn-size", "100", "--json"
    )
    old.write(b"old1\n")
    delivered(old, 1)
    kctl_in(cluster.dir, "produce", "f", "--transactional-id", "same", input="new1\n")
    old.write(b"old2\n")
    assert old.finish() == ExitCode.CONFLICT  # without waiting for more input
    assert old.err[-1] == "kctl: error: producer fenced: another producer registered transactional id 'same'"
    assert values(cluster.dir, "f") == ["new1"]
