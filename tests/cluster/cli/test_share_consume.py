"""`kctl consume --share-group` on a real broker (KIP-932): what a member releases comes to
the next one, what it accepts never again, and the options that pick partitions or offsets
are refused beside it."""

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.kctl.local import kctl_in

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

FORMAT = "%o %s\\n"


def offsets(result) -> list[int]:
    return [int(line.split(" ", 1)[0]) for line in result.stdout.decode().splitlines()]


def test_released_records_come_to_the_next_member_and_accepted_ones_never(cluster_factory):
    cluster = cluster_factory(1, {"share.auto.offset.reset": "earliest"})
    kctl_in(cluster.dir, "topic", "create", "jobs", "-p", "1")
    kctl_in(cluster.dir, "produce", "jobs", input="".join(f"job{i}\n" for i in range(10)))
    released = kctl_in(
        cluster.dir,
        "consume",
        "jobs",
        "--share-group",
        "workers",
        "--ack",
        "release",
        "-n",
        "3",
        "-f",
        FORMAT,
    )
    assert offsets(released) == [0, 1, 2]
    assert "Processed a total of 3 messages" in released.stderr
    accepted = kctl_in(cluster.dir, "consume", "jobs", "--share-group", "workers", "-n", "10", "-f", FORMAT)
    assert sorted(offsets(accepted)) == list(range(10))
    kctl_in(cluster.dir, "produce", "jobs", input="job10\n")
    after = kctl_in(cluster.dir, "consume", "jobs", "--share-group", "workers", "-n", "1", "-f", FORMAT)
    assert offsets(after) == [10]


def test_partition_and_offset_options_do_not_go_with_a_share_group(cluster_factory):
    cluster = cluster_factory(1)
    refused = kctl_in(
        cluster.dir, "consume", "jobs", "--share-group", "w", "-g", "g", "-o", "end", expect=ExitCode.USAGE
    )
    assert "--share-group does not go with -g, -o" in refused.stderr
