"""KIP-848 groups through the CLI on a real broker: `kctl consume -g G --group-protocol
consumer` members share a topic's partitions as the broker assigns them, and `kctl group
list --type` and `kctl group describe` show the group's type and each member's assignment."""

from __future__ import annotations

import re
import signal

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import partitions_held
from tests.kctl.local import kctl_in, kctl_json

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

FORMAT = "%p %o %s\\n"
# heartbeats every second: the broker moves partitions within a few seconds
FAST_GROUPS = {
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
}


def test_consumer_protocol_members_share_and_the_group_shows_its_type(cluster_factory, kctl_processes):
    cluster = cluster_factory(1, FAST_GROUPS)
    kctl_in(cluster.dir, "topic", "create", "t", "-p", "4")
    args = ("consume", "t", "-g", "g", "--group-protocol", "consumer", "-f", FORMAT)
    a = kctl_processes(cluster.dir, *args)
    a.wait_for(lambda: partitions_held(a) == {0, 1, 2, 3}, "the first member to get every partition")
    b = kctl_processes(cluster.dir, *args)
    a.wait_for(
        lambda: (
            len(partitions_held(a)) == 2
            and len(partitions_held(b)) == 2
            and not partitions_held(a) & partitions_held(b)
        ),
        "the broker to split the partitions",
        timeout=60,
    )
    values = [f"v{i}" for i in range(100)]
    kctl_in(cluster.dir, "produce", "t", input="".join(f"{v}\n" for v in values))
    wait_until(lambda: len(a.out) + len(b.out) >= 100, 30, "every record to be printed")
    printed = [line.split(" ", 2)[2] for m in (a, b) for line in list(m.out)]
    assert sorted(printed) == sorted(values)

    listed = kctl_json(cluster.dir, "group", "list", "--type", "consumer")
    row = next(r for r in listed if r["group"] == "g")
    assert row["type"] == "consumer" and row["members"] == 2
    assert all(r["group"] != "g" for r in kctl_json(cluster.dir, "group", "list", "--type", "classic"))
    described = kctl_json(cluster.dir, "group", "describe", "g")
    assert described["type"] == "consumer"
    owned = sorted(p["partition"] for m in described["members"] for p in m["assignment"])
    assert owned == [0, 1, 2, 3]
    assert all(m["target_assignment"] == m["assignment"] for m in described["members"])
    text = kctl_in(cluster.dir, "group", "describe", "g").stdout.decode()
    assert re.search(r"type\s+consumer", text)

    a.proc.send_signal(signal.SIGINT)
    assert a.finish() == ExitCode.INTERRUPTED
    b.wait_for(lambda: partitions_held(b) == {0, 1, 2, 3}, "the survivor to get every partition", timeout=30)
    b.proc.send_signal(signal.SIGINT)
    assert b.finish() == ExitCode.INTERRUPTED


def test_group_protocol_needs_a_group(cluster):
    result = kctl_in(cluster.dir, "consume", "t", "--group-protocol", "consumer", expect=ExitCode.USAGE)
    assert "--group-protocol needs -g" in result.stderr
