"""Starting and stopping one broker through the CLI, on real brokerd daemons: a broker stopped
by SIGTERM says so in its log; a broker that is slow to start (it recovers its partitions after
a crash) is waited for, and never killed by the command that started it, even when that
command gives up waiting (`--timeout`); one that exits while starting is reported with its log."""

import shutil

import pytest

from brokerd.state import ClusterState
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.local import BROKERS_ONLY, kctl_in, kctl_json

RECORDS = 50


def broker_state(directory, broker_id: int = 1) -> str:
    return next(b["state"] for b in kctl_json(directory, "broker", "list")["brokers"] if b["id"] == broker_id)


def crashed_with_partitions(directory, partitions: int) -> str:
    """A 1-broker cluster holding `partitions` partitions and RECORDS records, killed (SIGKILL),
    so that its next start opens and recovers every log: a start that takes a while for real.
    Returns the log as it was when the broker died."""
    kctl_in(directory, "cluster", "up", "--brokers", "1", *BROKERS_ONLY)
    kctl_in(directory, "topic", "create", "many", "-p", str(partitions))
    kctl_in(directory, "produce", "many", "--acks", "all", input="".join(f"r{i}\n" for i in range(RECORDS)))
    kctl_in(directory, "broker", "kill", "1")
    return broker_log(directory)


def broker_log(directory, broker_id: int = 1) -> str:
    return (ClusterState(directory).broker_dir(broker_id) / "broker.log").read_text()


def all_records_kept(directory) -> None:
    consumed = kctl_in(directory, "consume", "many", "-o", "start", "-e").stdout.decode().splitlines()
    assert sorted(consumed) == sorted(f"r{i}" for i in range(RECORDS))


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_broker_stopped_by_sigterm_logs_why_and_that_it_stopped(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", "--brokers", "1", *BROKERS_ONLY)
    kctl_in(cluster_dir, "broker", "stop", "1")
    lines = broker_log(cluster_dir).splitlines()
    serving = next(i for i, line in enumerate(lines) if "broker 1 serving on" in line)
    stopping = next(i for i, line in enumerate(lines) if "broker 1 stopping: SIGTERM received" in line)
    stopped = next(i for i, line in enumerate(lines) if line.endswith("broker 1 stopped"))
    assert serving < stopping < stopped == len(lines) - 1


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_start_that_stops_waiting_leaves_the_broker_starting_and_says_so(cluster_dir):
    before = crashed_with_partitions(cluster_dir, 300)
    gave_up = kctl_in(cluster_dir, "broker", "start", "1", "--timeout", "0.1", expect=ExitCode.UNREACHABLE)
    assert gave_up.stderr == (
        "kctl: error: broker 1 is still starting after 0.1s; it keeps running: "
        "`kctl broker list` shows when it is alive\n"
    )
    # it registers (alive in `kctl broker list`), recovers its logs, then logs that it serves
    wait_until(
        lambda: "broker 1 serving on" in broker_log(cluster_dir)[len(before) :],
        90,
        "the broker left starting to finish its start",
    )
    assert broker_state(cluster_dir) == "alive"
    assert "stopping" not in broker_log(cluster_dir)[len(before) :]  # the one started, never stopped
    again = kctl_in(cluster_dir, "broker", "start", "1", expect=ExitCode.CONFLICT)
    assert "broker 1 is already running" in again.stderr
    all_records_kept(cluster_dir)
    assert kctl_json(cluster_dir, "cluster", "down")["brokers"] == [{"id": 1, "result": "stopped"}]


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_broker_that_exits_while_starting_is_reported_with_its_log(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", "--brokers", "1", *BROKERS_ONLY)
    kctl_in(cluster_dir, "broker", "stop", "1")
    data = ClusterState(cluster_dir).broker_dir(1) / "data"
    shutil.rmtree(data)
    data.write_text("not a directory")
    failed = kctl_in(cluster_dir, "broker", "start", "1", expect=ExitCode.ERROR)
    assert "last lines of" in failed.stderr and "cannot start" in failed.stderr
    assert failed.stderr.strip().splitlines()[-1].startswith("kctl: error: broker 1 exited with code")
    assert broker_state(cluster_dir) == "dead"
