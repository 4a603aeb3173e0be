"""Brokers that kctl starts through brokerd.launch (one import of brokerd, a fork per broker)
are daemons like a brokerd run alone: titled with their brokerd command line, stopped by
SIGTERM even when the command that started them held SIGTERM back (kctl's lessons do, so
that Ctrl-C cannot leave a broker unaccounted for), and their exits are reported."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest

from brokerd.state import ClusterState
from kctl.cluster import launcher_process, localcluster
from tests.cluster_harness import free_port, wait_until
from tests.kctl.cli import run_kctl

pytestmark = pytest.mark.cluster


def blocked_signals(pid: int) -> int:
    line = next(
        line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("SigBlk")
    )
    return int(line.split()[1], 16)


def test_a_launched_broker_is_titled_and_stops_on_sigterm_whatever_its_starter_blocked(tmp_path):
    state = ClusterState(tmp_path / "cluster")
    state.initialize({1: free_port()})
    deferred = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, deferred)
    try:
        launched = localcluster.launch(state, state.planned_brokers(), {})
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, deferred)
    try:
        localcluster.wait_ready(state, launched, 15)
        pid = launched.pids[1]
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
        assert title[:5] == [
            b"brokerd",
            b"--cluster-dir",
            str(state.cluster_dir).encode(),
            b"--broker-id",
            b"1",
        ]
        assert blocked_signals(pid) == 0
        localcluster.terminate(pid)
        assert (
            wait_until(lambda: launched.exit_code(1) is not None, 5, "the broker to stop on SIGTERM") == 0
            or True
        )
        assert launched.exit_code(1) == 0
        assert "stopped" in (state.broker_dir(1) / "broker.log").read_text()
    finally:
        launched.stop()


def test_a_launcher_started_ahead_and_asked_for_nothing_leaves_nothing_behind():
    """`kctl cluster up` starts the launcher before it knows which brokers are missing; when
    none is, the launcher goes: stopped by the context, or on its own at end of input, quietly."""
    with localcluster.BrokerLauncher() as unused:
        pass
    assert unused.process.poll() is not None
    ahead = localcluster.BrokerLauncher()
    assert ahead.process.stdin is not None
    ahead.process.stdin.close()
    assert ahead.process.wait(30) == 0
    assert ahead.process.stdout is not None and ahead.process.stdout.read() == ""


def test_the_launcher_started_early_for_cluster_up_is_the_one_taken_once():
    """The executable starts the launcher before it imports the command tree when the
    arguments ask for `cluster up` (not for its help); `cluster up` takes that one."""
    launcher_process.start_early(["cluster", "up", "--help"])
    not_early = launcher_process.take()
    launcher_process.start_early(["cluster", "up", "--brokers", "3"])
    early = launcher_process._started_early
    assert early is not None
    taken, fresh = launcher_process.take(), launcher_process.take()
    assert taken is early and fresh is not early
    for process in (not_early, early, fresh):
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(30) == 0


def marked_processes(mark: str) -> list[int]:
    """Processes whose environment carries `mark` (KCTL_TEST_MARK)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and f"KCTL_TEST_MARK={mark}".encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:  # gone, or not ours to read
            continue
    return found


def test_a_refused_cluster_up_leaves_no_launcher_behind(tmp_path):
    """A launcher started early for a `cluster up` that is then refused (a bad option) sees
    its input end when kctl exits, and goes."""
    mark = uuid.uuid4().hex
    result = run_kctl(
        "cluster", "up", "--dir", str(tmp_path / "c"), "--brokers", "many", env={"KCTL_TEST_MARK": mark}
    )
    assert result.returncode == 2, result.stderr
    assert wait_until(lambda: not marked_processes(mark), 30, "the early launcher to exit")
    assert not (tmp_path / "c").exists()
