"""Consumer groups through the CLI on a real broker: `kctl consume -g` members sharing
partitions and committing per mode, `kctl group describe|list|reset-offsets|delete`, and the
refusals while a group has active members."""

import re
import signal
import subprocess

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import kctl_command, kctl_env
from tests.kctl.local import kctl_in, kctl_json

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

FORMAT = "%p %o %s\\n"


def assignment(member) -> set[int]:
    """The partitions a `kctl consume -g` process holds, from its rebalance lines on stderr."""
    held: set[int] = set()
    for line in list(member.err):
        found = re.match(r"group \S+: (assigned|revoked) (.*)", line)
        if found:
            parts = {int(p) for p in re.findall(r"/(\d+)", found[2])}
            held = parts if found[1] == "assigned" else held - parts
    return held


def records(member) -> list[tuple[int, int, str]]:
    return [(int(p), int(o), v) for p, o, v in (line.split(" ", 2) for line in list(member.out))]


def produce(directory, topic, values, *args):
    kctl_in(directory, "produce", topic, "-K", ":", *args, input="".join(f"{v}:{v}\n" for v in values))


def committed(directory, group) -> dict[int, int | None]:
    return {
        p["partition"]: p["committed_offset"]
        for p in kctl_json(directory, "group", "describe", group)["partitions"]
    }


def test_members_share_partitions_and_print_each_record_once(cluster, kctl_processes):
    kctl_in(cluster.dir, "topic", "create", "t", "-p", "4")
    a = kctl_processes(cluster.dir, "consume", "t", "-g", "g", "-f", FORMAT)
    a.wait_for(lambda: assignment(a) == {0, 1, 2, 3}, "the first member to get every partition")
    b = kctl_processes(cluster.dir, "consume", "t", "-g", "g", "-f", FORMAT)
    b.wait_for(
        lambda: (
            assignment(a)
            and assignment(b)
            and not assignment(a) & assignment(b)
            and assignment(a) | assignment(b) == {0, 1, 2, 3}
        ),
        "the two members to share",
    )
    values = [f"v{i}" for i in range(200)]
    produce(cluster.dir, "t", values)
    wait_until(lambda: len(a.out) + len(b.out) >= 200, 20, "every record to be printed")
    assert sorted(v for m in (a, b) for *_, v in records(m)) == sorted(values)  # each once
    for member in (a, b):
        assert {p for p, *_ in records(member)} <= assignment(member)

    snap = kctl_json(cluster.dir, "watch", "t", "--once")
    group = next(g for g in snap["groups"] if g["group"] == "g")
    assert group["state"] == "Stable" and len(group["members"]) == 2 and group["total_lag"] == 0

    a.proc.send_signal(signal.SIGINT)
    assert a.finish() == ExitCode.INTERRUPTED
    b.wait_for(lambda: assignment(b) == {0, 1, 2, 3}, "the survivor to take over at once", timeout=8)
    produce(cluster.dir, "t", ["late"])
    b.wait_for(lambda: any(v == "late" for *_, v in records(b)), "the survivor to read on")
    b.proc.send_signal(signal.SIGINT)
    assert b.finish() == ExitCode.INTERRUPTED

    produce(cluster.dir, "t", [f"w{i}" for i in range(7)])
    doc = kctl_json(cluster.dir, "group", "describe", "g")
    assert doc["state"] == "Empty" and doc["members"] == [] and doc["total_lag"] == 7
    assert all(p["lag"] == p["high_watermark"] - p["committed_offset"] for p in doc["partitions"])
    listed = {row["group"]: row for row in kctl_json(cluster.dir, "group", "list")}
    assert listed["g"]["state"] == "Empty" and listed["g"]["coordinator"]["id"] == 1


def test_commit_modes(cluster):
    kctl_in(cluster.dir, "topic", "create", "c", "-p", "1")
    produce(cluster.dir, "c", range(10))

    def consume(group, *args):
        return kctl_in(cluster.dir, "consume", "c", "-g", group, "-f", "%o\\n", *args).stdout.split()

    assert consume("after", "-n", "4") == [b"0", b"1", b"2", b"3"]
    assert committed(cluster.dir, "after") == {0: 4}  # what was printed
    assert consume("after", "-n", "3") == [b"4", b"5", b"6"]  # resumes there
    assert committed(cluster.dir, "after") == {0: 7}
    assert consume("before", "-n", "2", "--commit", "before") == [b"0", b"1"]
    assert committed(cluster.dir, "before") == {0: 2}
    assert consume("never", "-n", "2", "--commit", "never") == [b"0", b"1"]
    assert committed(cluster.dir, "never") == {}


def test_a_new_group_starts_where_o_says(cluster, kctl_processes):
    kctl_in(cluster.dir, "topic", "create", "o", "-p", "1")
    produce(cluster.dir, "o", ["old"])
    late = kctl_processes(cluster.dir, "consume", "o", "-g", "late", "-o", "end", "-n", "1", "-f", FORMAT)
    late.wait_for(lambda: assignment(late) == {0}, "the assignment")
    produce(cluster.dir, "o", ["new"])
    assert late.finish() == 0 and records(late) == [(0, 1, "new")]
    assert committed(cluster.dir, "late") == {0: 2}


@pytest.mark.parametrize("mode", ["after", "before"])
def test_what_a_failed_write_costs_per_commit_mode(cluster, mode):
    """stdout closed before the first write: `after` committed nothing, so a restart prints
    every record (at-least-once); `before` committed what it never printed (at-most-once)."""
    kctl_in(cluster.dir, "topic", "create", "w", "-p", "1")
    produce(cluster.dir, "w", range(10))
    proc = subprocess.Popen(
        kctl_command("consume", "w", "-g", mode, "--commit", mode, "-n", "5"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=kctl_env({"KCTL_HOME": str(cluster.dir)}),
    )
    proc.stdout.close()
    assert proc.wait(30) == ExitCode.BROKEN_PIPE
    lost = committed(cluster.dir, mode).get(0, 0)
    assert lost == 0 if mode == "after" else 1 <= lost <= 5
    again = kctl_in(cluster.dir, "consume", "w", "-g", mode, "-n", str(10 - lost), "-f", "%o\\n")
    assert again.stdout.split() == [str(o).encode() for o in range(lost, 10)]


def test_reset_offsets_plans_then_does_exactly_that(cluster):
    kctl_in(cluster.dir, "topic", "create", "r", "-p", "2")
    for p in (0, 1):
        kctl_in(cluster.dir, "produce", "r", "-p", str(p), input="".join(f"{i}\n" for i in range(6)))
    kctl_in(cluster.dir, "consume", "r", "-g", "rg", "-n", "12")
    assert committed(cluster.dir, "rg") == {0: 6, 1: 6}

    plan = kctl_json(cluster.dir, "group", "reset-offsets", "rg", "--shift-by", "-4")
    assert not plan["executed"] and committed(cluster.dir, "rg") == {0: 6, 1: 6}  # a dry run
    assert [(p["partition"], p["prior_offset"], p["new_offset"]) for p in plan["partitions"]] == [
        (0, 6, 2),
        (1, 6, 2),
    ]
    done = kctl_json(cluster.dir, "group", "reset-offsets", "rg", "--shift-by", "-4", "--execute")
    assert done["executed"] and done["partitions"] == plan["partitions"]
    assert committed(cluster.dir, "rg") == {0: 2, 1: 2}
    assert kctl_json(cluster.dir, "group", "describe", "rg")["total_lag"] == 8

    text = kctl_in(cluster.dir, "group", "reset-offsets", "rg", "--to-offset", "99", "--topic", "r:1")
    assert text.stdout.decode().split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "PRIOR-OFFSET",
        "NEW-OFFSET",
        "rg",
        "r",
        "1",
        "2",
        "6",
    ]  # kept inside the log
    assert "--execute" in text.stderr
    kctl_in(cluster.dir, "group", "reset-offsets", "rg", "--to-earliest", "--topic", "r:1", "--execute")
    assert committed(cluster.dir, "rg") == {0: 2, 1: 0}
    kctl_in(cluster.dir, "group", "reset-offsets", "rg", "--to-datetime", "-1h", "--execute")
    assert committed(cluster.dir, "rg") == {0: 0, 1: 0}
    kctl_in(
        cluster.dir,
        "group",
        "reset-offsets",
        "rg",
        "--to-latest",
        "--topic",
        "r:7",
        expect=ExitCode.NOT_FOUND,
    )
    kctl_in(cluster.dir, "group", "reset-offsets", "rg", expect=ExitCode.USAGE)


def test_active_groups_cannot_be_reset_or_deleted(cluster, kctl_processes):
    kctl_in(cluster.dir, "topic", "create", "a", "-p", "1")
    produce(cluster.dir, "a", ["x"])
    member = kctl_processes(cluster.dir, "consume", "a", "-g", "busy", "-f", FORMAT)
    member.wait_for(lambda: member.out, "the member to read")
    for args in (
        ["reset-offsets", "busy", "--to-earliest"],
        ["reset-offsets", "busy", "--to-earliest", "--execute"],
        ["delete", "busy"],
    ):
        refused = kctl_in(cluster.dir, "group", *args, expect=ExitCode.CONFLICT)
        assert refused.stderr.startswith("kctl: error: group 'busy' has 1 active member(s)")
        assert refused.stderr.count("\n") == 1
    wait_until(lambda: committed(cluster.dir, "busy") == {0: 1}, 10, "the commit after the write")

    member.proc.send_signal(signal.SIGINT)
    assert member.finish() == ExitCode.INTERRUPTED
    kctl_in(cluster.dir, "group", "delete", "busy")
    assert "busy" not in {row["group"] for row in kctl_json(cluster.dir, "group", "list")}
    kctl_in(cluster.dir, "group", "describe", "busy", expect=ExitCode.NOT_FOUND)
    kctl_in(cluster.dir, "group", "delete", "busy", expect=ExitCode.NOT_FOUND)
    names = {row["name"] for row in kctl_json(cluster.dir, "topic", "list")}
    assert "a" in names and "__consumer_offsets" not in names  # internal: hidden
    assert "__consumer_offsets" in {
        row["name"] for row in kctl_json(cluster.dir, "topic", "list", "--internal")
    }


def test_describe_shows_the_last_stable_offset_below_an_open_transaction(cluster, kctl_processes):
    """Lag stays high watermark - committed (kafka-consumer-groups.sh's), and the last stable
    offset shows that what the read_committed group has not read is an open transaction."""
    kctl_in(cluster.dir, "topic", "create", "tx", "-p", "1")
    kctl_in(cluster.dir, "produce", "tx", "--transactional-id", "done", input="c1\nc2\n")  # 0, 1, marker 2
    open_txn = kctl_processes(
        cluster.dir, "produce", "tx", "--transactional-id", "open", "--txn-size", "100", "--json"
    )
    open_txn.write(b"u1\nu2\n")
    open_txn.wait_for(lambda: len(open_txn.out) == 2, "the open transaction's records")  # 3, 4
    assert kctl_in(cluster.dir, "consume", "tx", "-g", "reader", "-n", "2").stdout.split() == [b"c1", b"c2"]

    part = kctl_json(cluster.dir, "group", "describe", "reader")["partitions"][0]
    assert (part["last_stable_offset"], part["high_watermark"]) == (3, 5)
    assert part["lag"] == 5 - part["committed_offset"] >= 2
    text = kctl_in(cluster.dir, "group", "describe", "reader").stdout.decode().splitlines()
    header = text.index(next(line for line in text if line.startswith("TOPIC")))
    row = dict(zip(text[header].split(), text[header + 1].split()))
    assert (row["LAST-STABLE-OFFSET"], row["LOG-END-OFFSET"]) == ("3", "5")

    open_txn.proc.send_signal(signal.SIGINT)
    assert open_txn.finish() == ExitCode.INTERRUPTED
    part = kctl_json(cluster.dir, "group", "describe", "reader")["partitions"][0]
    assert part["last_stable_offset"] == part["high_watermark"] == 6  # abort marker at 5
