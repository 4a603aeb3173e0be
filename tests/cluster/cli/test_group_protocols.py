"""Kafka 4's group protocols through the CLI on a real broker: a share group's delivery
counts, releases and rejections as `kctl consume --share-group` shows them, `kctl group
list --type share` and `kctl group describe` of share and KIP-848 groups (epochs, members,
start offsets), and `kctl watch` telling a KIP-848 rebalance step by step and a share
group's records acquired, released, acquired again and back after an expired lock."""

from __future__ import annotations

import json
import re
import signal

import pytest
from confluent_kafka import ShareConsumer

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import partitions_held
from tests.kctl.local import kctl_in, kctl_json

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

# share groups start at the log start; KIP-848 members heartbeat every second
SETTINGS = {
    "share.auto.offset.reset": "earliest",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
}


def lines(result) -> list[str]:
    return result.stdout.decode().splitlines()


def test_released_records_come_back_with_delivery_count_2_and_rejected_ones_never(cluster_factory):
    cluster = cluster_factory(1, SETTINGS)
    kctl_in(cluster.dir, "topic", "create", "jobs", "-p", "1")
    kctl_in(cluster.dir, "produce", "jobs", input="".join(f"job{i}\n" for i in range(6)))
    share = ("consume", "jobs", "--share-group", "workers")

    released = kctl_in(cluster.dir, *share, "--ack", "release", "-n", "3", "-f", "%o %d %s\\n")
    assert lines(released) == ["0 1 job0", "1 1 job1", "2 1 job2"]

    rejected = kctl_in(cluster.dir, *share, "--ack", "reject", "-n", "3", "--json")
    docs = [json.loads(line) for line in lines(rejected)]
    assert [(d["offset"], d["value"], d["delivery_count"]) for d in docs] == [
        (0, "job0", 2),
        (1, "job1", 2),
        (2, "job2", 2),
    ]

    kctl_in(cluster.dir, "produce", "jobs", input="job6\n")
    accepted = kctl_in(cluster.dir, *share, "-n", "4", "-f", "%o\\n")
    assert sorted(int(o) for o in lines(accepted)) == [3, 4, 5, 6]  # never 0-2 again

    listed = kctl_json(cluster.dir, "group", "list", "--type", "share")
    assert [(g["group"], g["type"], g["members"]) for g in listed] == [("workers", "share", 0)]
    assert all(g["group"] != "workers" for g in kctl_json(cluster.dir, "group", "list", "--type", "consumer"))
    assert "workers" in kctl_in(cluster.dir, "group", "list").stdout.decode()

    def described_at_the_end() -> dict | None:
        doc = kctl_json(cluster.dir, "group", "describe", "workers")
        done = [(p["partition"], p["start_offset"], p["lag"]) for p in doc["partitions"]] == [(0, 7, 0)]
        return doc if done else None

    # every record acknowledged: the share-partition start offset is past them all, also
    # once the group has no members left
    doc = wait_until(described_at_the_end, 30, "the start offset to pass every acknowledged record")
    assert (doc["type"], doc["protocol_type"], doc["state"], doc["members"]) == (
        "share",
        "share",
        "Empty",
        [],
    )


def test_a_share_group_member_is_described_while_it_reads(cluster_factory, kctl_processes):
    cluster = cluster_factory(1, SETTINGS)
    kctl_in(cluster.dir, "topic", "create", "jobs", "-p", "2")
    kctl_in(cluster.dir, "produce", "jobs", input="a\nb\n")
    member = kctl_processes(cluster.dir, "consume", "jobs", "--share-group", "workers", "-f", "%p %o %d\\n")
    member.wait_for(lambda: len(member.out) >= 2, "both records")
    assert all(line.endswith(" 1") for line in member.out)  # first deliveries

    doc = kctl_json(cluster.dir, "group", "describe", "workers")
    assert (doc["type"], doc["state"], len(doc["members"])) == ("share", "Stable", 1)
    [m] = doc["members"]
    assert m["member_epoch"] >= 1
    assert sorted(p["partition"] for p in m["assignment"]) == [0, 1]
    assert all(p["members"] == [m["member_id"]] for p in doc["partitions"])

    def caught_up() -> bool:
        parts = kctl_json(cluster.dir, "group", "describe", "workers")["partitions"]
        written = [p for p in parts if p["high_watermark"]]
        return all(p["start_offset"] == p["high_watermark"] and p["lag"] == 0 for p in written)

    # both records accepted: the share start offset of each partition written to is past its
    # records, so nothing is left to deliver
    wait_until(caught_up, 30, "the start offsets to pass the records")
    text = kctl_in(cluster.dir, "group", "describe", "workers").stdout.decode()
    assert re.search(r"type\s+share", text) and "START-OFFSET" in text and m["member_id"] in text

    member.proc.send_signal(signal.SIGINT)
    assert member.finish() == ExitCode.INTERRUPTED


def test_a_kip848_rebalance_is_described_with_epochs_and_watched_step_by_step(
    cluster_factory, kctl_processes
):
    cluster = cluster_factory(1, SETTINGS)
    kctl_in(cluster.dir, "topic", "create", "t", "-p", "4")
    watch = kctl_processes(cluster.dir, "watch", "t", "-g", "g", "--duration", "180s", "-i", "0.3")
    args = ("consume", "t", "-g", "g", "--group-protocol", "consumer", "--remote-assignor", "range")
    a = kctl_processes(cluster.dir, *args)
    a.wait_for(
        lambda: partitions_held(a) == {0, 1, 2, 3}, "the first member to get every partition", timeout=60
    )
    first = kctl_json(cluster.dir, "group", "describe", "g")
    [member_a] = first["members"]
    epoch_a = member_a["member_epoch"]

    b = kctl_processes(cluster.dir, *args)
    a.wait_for(
        lambda: (
            len(partitions_held(a)) == 2
            and len(partitions_held(b)) == 2
            and not partitions_held(a) & partitions_held(b)
        ),
        "the broker to split the partitions",
        timeout=90,
    )

    # A gave up two partitions and kept two: its empty step after the revocation is no news
    assert not any("no partitions" in line for line in a.err)

    def settled() -> dict | None:
        doc = kctl_json(cluster.dir, "group", "describe", "g")
        members = doc["members"]
        done = len(members) == 2 and all(
            m["member_epoch"] == doc["assignment_epoch"] and m["assignment"] == m["target_assignment"]
            for m in members
        )
        return doc if done else None

    doc = wait_until(settled, 60, "both members to reach the assignment epoch")
    assert (doc["type"], doc["assignor"], doc["state"]) == ("consumer", "range", "Stable")
    assert doc["group_epoch"] > first["group_epoch"] and doc["assignment_epoch"] > epoch_a
    member_b = next(m for m in doc["members"] if m["member_id"] != member_a["member_id"])
    moved = sorted(p["partition"] for p in member_b["assignment"])
    text = kctl_in(cluster.dir, "group", "describe", "g").stdout.decode()
    assert re.search(r"group-epoch\s+\d+", text) and "MEMBERS" in text and member_b["member_id"] in text

    # the watch told the move as steps: revoked from A at the epoch it held them, assigned to
    # B at a later one
    pattern = r"group g: t/(\d) (revoked from|assigned to) member (\S+) at epoch (\d+)"

    def steps() -> list[tuple[int, str, str, int]]:
        return [
            (int(m[1]), m[2], m[3], int(m[4])) for line in list(watch.out) if (m := re.search(pattern, line))
        ]

    def told() -> bool:
        revoked = {p for p, how, who, _ in steps() if how == "revoked from" and who == member_a["member_id"]}
        assigned = {p for p, how, who, _ in steps() if how == "assigned to" and who == member_b["member_id"]}
        return revoked == assigned == set(moved)

    watch.wait_for(told, "the watch to tell the partitions moving from A to B", timeout=30)
    for partition, how, who, epoch in steps():
        if partition in moved and how == "revoked from" and who == member_a["member_id"]:
            assert epoch >= epoch_a
        if partition in moved and how == "assigned to" and who == member_b["member_id"]:
            assert epoch > epoch_a
    assert any(f"member {member_b['member_id']} joined" in line for line in watch.out)

    for member in (a, b, watch):
        member.proc.send_signal(signal.SIGINT)
        assert member.finish() == ExitCode.INTERRUPTED, "\n".join(member.err)


def test_remote_assignor_needs_the_consumer_protocol(cluster):
    refused = kctl_in(
        cluster.dir, "consume", "t", "-g", "g", "--remote-assignor", "range", expect=ExitCode.USAGE
    )
    assert "--remote-assignor needs -g GROUP --group-protocol consumer" in refused.stderr
    shared = ("consume", "t", "--share-group", "w", "--group-protocol", "consumer")
    assert "a share group has its own protocol" in kctl_in(cluster.dir, *shared, expect=ExitCode.USAGE).stderr
    bad = kctl_in(cluster.dir, "consume", "t", "-f", "%d\\n", expect=ExitCode.INVALID_INPUT)
    assert "%d (delivery count) needs --share-group" in bad.stderr


def test_the_watch_tells_a_share_start_offset_moving_on_and_a_member_leaving(cluster_factory, kctl_processes):
    cluster = cluster_factory(1, SETTINGS)
    kctl_in(cluster.dir, "topic", "create", "jobs", "-p", "1")
    # --json: every moment the watch sees (its groups and the changes it tells), one a line
    watch = kctl_processes(cluster.dir, "watch", "jobs", "-g", "workers", "--json", "--duration", "180s")
    kctl_in(cluster.dir, "produce", "jobs", input="a\nb\n")
    member = kctl_processes(cluster.dir, "consume", "jobs", "--share-group", "workers", "-f", "%o\\n")
    member.wait_for(lambda: member.out == ["0", "1"], "the first two records")

    def moments() -> list[dict]:
        return [json.loads(line) for line in list(watch.out)]

    def start_offset_seen(offset: int) -> bool:
        return any(
            p.get("start_offset") == offset
            for m in moments()
            for g in m["groups"]
            for p in g.get("partitions", [])
        )

    watch.wait_for(
        lambda: start_offset_seen(2), "the watch to see the first two records accepted", timeout=30
    )
    kctl_in(cluster.dir, "produce", "jobs", input="c\nd\n")
    member.wait_for(lambda: member.out == ["0", "1", "2", "3"], "the next two records")
    told = re.compile(r"group workers: jobs/0 share start offset [23] -> 4: records below it acknowledged")
    watch.wait_for(
        lambda: any(told.match(e) for m in moments() for e in m["events"]),
        "the start offset moving on",
        timeout=30,
    )

    member.proc.send_signal(signal.SIGINT)
    assert member.finish() == ExitCode.INTERRUPTED
    left = re.compile(r"group workers: member \S+ left")
    watch.wait_for(lambda: any(left.match(e) for m in moments() for e in m["events"]), "a leave", timeout=30)
    watch.proc.send_signal(signal.SIGINT)
    assert watch.finish() == ExitCode.INTERRUPTED


def test_the_watch_tells_a_release_a_redelivery_and_a_lock_expiry(cluster_factory, kctl_processes):
    locks = {"group.share.min.record.lock.duration.ms": "1000", "group.share.record.lock.duration.ms": "2000"}
    cluster = cluster_factory(1, {**SETTINGS, **locks})
    kctl_in(cluster.dir, "topic", "create", "jobs", "-p", "1")
    watch = kctl_processes(cluster.dir, "watch", "jobs", "-g", "workers", "--json", "--duration", "180s")
    kctl_in(cluster.dir, "produce", "jobs", input="a\n")
    share = ("consume", "jobs", "--share-group", "workers", "-n", "1", "-f", "%o %d\\n")
    assert lines(kctl_in(cluster.dir, *share, "--ack", "release")) == ["0 1"]
    assert lines(kctl_in(cluster.dir, *share)) == ["0 2"]

    def told(pattern: str) -> bool:
        said = re.compile(pattern)
        return any(said.search(e) for line in list(watch.out) for e in json.loads(line)["events"])

    watch.wait_for(lambda: told(r"^group workers: jobs/0: .*\b1 released"), "the release", timeout=30)
    watch.wait_for(
        lambda: told(r"^group workers: jobs/0: .*1 of them acquired again \(delivery count 2\)"),
        "the redelivery",
        timeout=30,
    )
    watch.wait_for(lambda: told(r"^group workers: jobs/0: .*1 accepted"), "the acceptance", timeout=30)

    # a member that holds a record without acknowledging it: its acquisition lock expires
    kctl_in(cluster.dir, "produce", "jobs", input="b\n")
    holder = ShareConsumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "workers",
            "share.acknowledgement.mode": "explicit",
        }
    )
    try:
        holder.subscribe(["jobs"])
        held = wait_until(lambda: [m.offset() for m in holder.poll(1.0) if m.error() is None], 30, "record 1")
        assert held == [1]
        watch.wait_for(
            lambda: told(r"^group workers: jobs/0: .*1 back after their acquisition lock expired"),
            "the lock expiry",
            timeout=30,
        )
    finally:
        holder.close()
    watch.proc.send_signal(signal.SIGINT)
    assert watch.finish() == ExitCode.INTERRUPTED
