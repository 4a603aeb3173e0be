"""Starting, watching and stopping the brokerd daemons of a local cluster.

Daemons run in their own session, detached from the terminal, with output appended to
`<dir>/brokers/<id>/broker.log`. Liveness is the OS lock each broker holds in the state
directory (brokerd.state), never a pid check: pids are reused, locks die with the process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from brokerd.state.cluster_plan import planned_host
from kctl.cluster import brokerconfig, brokerview, launcher_process, securecluster
from kctl.cluster.ports import ensure_port_free, free_ports
from kctl.kafka import clientprops
from kctl.kafka.bootstrap import Bootstrap, local_state, resolve_cluster_dir
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView

DEFAULT_BROKERS = 3
READY_TIMEOUT_S = 10.0  # a start usually answers well within it; a wait past it says so
STOP_TIMEOUT_S = 10.0
POLL_S = 0.05
ANSWER_TIMEOUT_S = 1.0


def plan(state: ClusterView, brokers: int | None, port_base: int | None) -> dict[int, int]:
    """Broker id -> port: the existing cluster's, else a new plan (free ports unless given)."""
    if state.exists():
        planned = state.planned_brokers()
        if brokers is not None and brokers != len(planned):
            raise KctlError(
                f"the cluster in {state.cluster_dir} has {len(planned)} broker(s), "
                f"not {brokers}; remove the directory to start a different cluster",
                ExitCode.INVALID_INPUT,
            )
        if port_base is not None and port_base != min(planned.values()):
            raise KctlError(
                f"the cluster in {state.cluster_dir} uses ports from "
                f"{min(planned.values())}, not {port_base}",
                ExitCode.INVALID_INPUT,
            )
        return planned
    count = brokers or DEFAULT_BROKERS
    ports = [port_base + i for i in range(count)] if port_base else free_ports(count)
    for port in ports:
        ensure_port_free(port)
    return {i + 1: port for i, port in enumerate(ports)}


def existing(cluster_dir: Path | None) -> ClusterView:
    """The local cluster's state (--dir, else $KCTL_HOME, else ~/.kctl), or exit 3 when the
    directory holds no cluster."""
    return local_state(resolve_cluster_dir(cluster_dir))


def start_missing(
    state: ClusterView,
    ports: dict[int, int],
    settings: dict[str, str],
    ready_timeout: float | None = None,
    launcher: BrokerLauncher | None = None,
) -> dict[int, int]:
    """Start those of `ports`' brokers that are not running (through `launcher`, if one was
    started ahead) and wait until they all answer, as long as they take (see wait_ready) or at
    most `ready_timeout` seconds from their launch; the pids of those started, by broker id."""
    running = {b.id for b in brokerview.view(state) if b.state != brokerview.DEAD}
    missing = {i: p for i, p in ports.items() if i not in running}
    for broker_id, port in missing.items():
        ensure_port_free(port, broker_id)
    if not missing:
        return {}
    started_at = time.monotonic()
    launched = launch(state, missing, settings, launcher)
    try:
        wait_ready(state, launched, ready_timeout, started_at)
    finally:
        launched.close()
    return dict(launched.pids)


def launch(
    state: ClusterView,
    ports: dict[int, int],
    settings: dict[str, str],
    launcher: BrokerLauncher | None = None,
) -> LaunchedBrokers:
    """Brokers in the background, with `settings` as their `-o name=value` options and
    listeners of the cluster's security protocol on their ports."""
    protocol = brokerconfig.security_protocol(state.cluster_dir)
    brokers = {}
    for broker_id, port in ports.items():
        log_path = state.broker_dir(broker_id) / "broker.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        host = planned_host(broker_id)
        argv = ["--cluster-dir", str(state.cluster_dir), "--broker-id", str(broker_id)]
        argv += ["--host", host, "--port", str(port)]
        for name, value in {**securecluster.listeners(protocol, host, port), **settings}.items():
            argv += ["-o", f"{name}={value}"]
        brokers[broker_id] = (argv, log_path)
    return (launcher or BrokerLauncher()).start(brokers)


class BrokerLauncher:
    """A `python -m brokerd.launch`, started before the brokers it is to start are known: it
    imports brokerd (most of a broker's start) while kctl prepares the cluster, on another
    core. Used as a context manager, a launcher that started nothing is stopped on the way out."""

    def __init__(self) -> None:
        self.process = launcher_process.take()
        self._started = False

    def start(self, brokers: dict[int, tuple[list[str], Path]]) -> LaunchedBrokers:
        self._started = True
        return LaunchedBrokers(self.process, brokers)

    def __enter__(self) -> BrokerLauncher:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._started:  # it has forked nothing yet: nothing to hand over
            self.process.kill()
            self.process.wait()


class LaunchedBrokers:
    """Brokers forked by one `python -m brokerd.launch`, which imports brokerd once for all of
    them: each one's pid, and its exit code if it ended while the launcher ran (until close)."""

    def __init__(self, launcher: subprocess.Popen[str], brokers: dict[int, tuple[list[str], Path]]):
        self._ids = list(brokers)
        self.pids: dict[int, int] = {}
        self.exit_codes: dict[int, int] = {}
        self._launcher = launcher
        assert self._launcher.stdin is not None and self._launcher.stdout is not None
        self._launcher.stdin.write(json.dumps([{"argv": a, "log": str(log)} for a, log in brokers.values()]))
        self._launcher.stdin.write("\n")
        self._launcher.stdin.flush()
        self._all_started = threading.Event()
        self._reader = threading.Thread(target=self._read_reports, name="kctl-broker-launch", daemon=True)
        self._reader.start()
        try:
            self._all_started.wait()
        except BaseException:  # Ctrl-C while they start: none is left running
            self.stop()
            raise
        if len(self.pids) < len(self._ids):
            self.close()
            raise KctlError(
                f"the broker launcher exited with code {self._launcher.returncode} before starting "
                "every broker",
                ExitCode.ERROR,
            )

    def _read(self, line: str) -> None:
        words = line.split()
        if len(words) == 3:
            broker_id, number = self._ids[int(words[1])], int(words[2])
            (self.pids if words[0] == "started" else self.exit_codes)[broker_id] = number

    def _read_reports(self) -> None:
        assert self._launcher.stdout is not None
        for line in self._launcher.stdout:
            self._read(line)
            if len(self.pids) == len(self._ids):
                self._all_started.set()
        self._all_started.set()  # the launcher has ended

    def exit_code(self, broker_id: int) -> int | None:
        return self.exit_codes.get(broker_id)

    def stop(self) -> None:
        """SIGTERM every broker still running (SIGCONT too: a paused one must run to act on
        it), SIGKILL those that have not exited within STOP_TIMEOUT_S, then close."""
        running = [i for i in self.pids if self.exit_code(i) is None]
        for broker_id in running:
            terminate(self.pids[broker_id])
        for broker_id in self._still_running(running, STOP_TIMEOUT_S):
            send(self.pids[broker_id], signal.SIGKILL)
        self._still_running(running, STOP_TIMEOUT_S)
        self.close()

    def _still_running(self, broker_ids: list[int], timeout: float) -> list[int]:
        """Those of `broker_ids` the launcher has not reported ended within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            running = [i for i in broker_ids if self.exit_code(i) is None]
            if not running or time.monotonic() > deadline:
                return running
            time.sleep(POLL_S)

    def close(self) -> None:
        """Let the launcher go (it reaps what has ended; the brokers live on without it)."""
        assert self._launcher.stdin is not None
        if not self._launcher.stdin.closed:
            self._launcher.stdin.close()
        self._launcher.wait()


def wait_ready(
    state: ClusterView,
    launched: LaunchedBrokers,
    timeout: float | None = None,
    started_at: float | None = None,
) -> None:
    """Until every launched broker is registered, alive and answers a metadata request, as
    long as that takes while its process runs: a broker recovering many partitions can take
    minutes, and is not killed for being slow. A wait longer than READY_TIMEOUT_S says so on
    stderr, once.

    A broker that exits fails the wait, and so does Ctrl-C: the brokers launched are stopped
    again, so `up` is all or nothing. When `timeout` seconds (from `started_at`, a
    time.monotonic(), else from now) pass first, the wait gives up (exit 3) and the brokers
    keep running.
    """
    # librdkafka, which _answers asks with, is imported while the brokers start, not after
    import kctl.kafka.client  # noqa: F401

    started = time.monotonic() if started_at is None else started_at
    pending = dict(launched.pids)
    noted = False
    try:
        # the brokers are asked at once: each question waits on the network, not on Python
        with ThreadPoolExecutor(max_workers=max(1, len(pending))) as pool:
            while pending:
                _fail_if_exited(state, launched, pending)
                asked = {i: pool.submit(_answers, state, i, pid) for i, pid in pending.items()}
                pending = {i: pending[i] for i, answer in asked.items() if not answer.result()}
                waited = time.monotonic() - started
                if not pending or (timeout is not None and waited > timeout):
                    break
                if not noted and waited > READY_TIMEOUT_S:
                    _note_still_starting(state, pending, waited)
                    noted = True
                time.sleep(POLL_S)
        _fail_if_exited(state, launched, pending)
    except BaseException:
        launched.stop()
        raise
    if pending:
        assert timeout is not None  # without one the wait ends only when all answer, or fails
        raise _still_starting(pending, timeout)


def _answers(state: ClusterView, broker_id: int, pid: int) -> bool:
    reg = next((r for r in state.brokers() if r.broker_id == broker_id), None)
    if reg is None or reg.pid != pid or not reg.alive:
        return False
    from kctl.kafka.client import Connection, fetch_metadata  # librdkafka: not for `cluster down`

    # A secured cluster answers only clients that authenticate: ask as its super user.
    broker = Bootstrap(f"{reg.host}:{reg.port}", "local", state.cluster_dir)
    conn = Connection(broker, ANSWER_TIMEOUT_S, properties=clientprops.for_bootstrap(broker, None))
    admin = conn.admin()
    try:
        fetch_metadata(admin, conn)
        return True
    except KctlError:
        return False


def _fail_if_exited(state: ClusterView, launched: LaunchedBrokers, pending: dict[int, int]) -> None:
    for broker_id in pending:
        code = launched.exit_code(broker_id)
        if code is not None:
            raise _startup_failure(state, broker_id, f"exited with code {code}")


def _still_starting(pending: dict[int, int], timeout: float) -> KctlError:
    """Exit 3, as for any wait that timed out; the brokers are left to finish starting."""
    if len(pending) == 1:
        what = f"broker {min(pending)} is still starting after {timeout:g}s; it keeps running"
        return KctlError(f"{what}: `kctl broker list` shows when it is alive", ExitCode.UNREACHABLE)
    ids = ", ".join(str(i) for i in sorted(pending))
    what = f"brokers {ids} are still starting after {timeout:g}s; they keep running"
    return KctlError(f"{what}: `kctl broker list` shows when they are alive", ExitCode.UNREACHABLE)


def _note_still_starting(state: ClusterView, pending: dict[int, int], waited: float) -> None:
    """One line on stderr: the brokers that are slow, whether each has registered yet (a
    broker registers, then recovers its partitions, then answers), and that the wait goes on."""
    registered = {r.broker_id for r in state.brokers() if r.alive and r.pid == pending.get(r.broker_id)}
    each = ", ".join(
        f"broker {i} {'registered, not answering yet' if i in registered else 'not registered yet'}"
        for i in sorted(pending)
    )
    them = "it" if len(pending) == 1 else "them"
    waiting = f"still starting after {waited:.0f}s; waiting for {them} (Ctrl-C stops {them})"
    sys.stderr.write(f"{each}: {waiting}\n")
    sys.stderr.flush()


def _startup_failure(state: ClusterView, broker_id: int, what: str) -> KctlError:
    log_path = state.broker_dir(broker_id) / "broker.log"
    tail = log_tail(log_path)
    if tail:
        sys.stderr.write(f"--- last lines of {log_path} ---\n{tail}\n---\n")
    return KctlError(f"broker {broker_id} {what} (log: {log_path})", ExitCode.ERROR)


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def stop_all(state: ClusterView, timeout: float = STOP_TIMEOUT_S) -> dict[int, str]:
    """SIGTERM every live broker, wait for all, SIGKILL stragglers: broker id -> outcome."""
    live = [r for r in state.brokers() if r.alive]
    outcome = {r.broker_id: "not running" for r in state.brokers() if not r.alive}
    for reg in live:
        terminate(reg.pid)
    gone = wait_dead(state, [r.broker_id for r in live], timeout)
    for reg in live:
        outcome[reg.broker_id] = "stopped" if reg.broker_id in gone else "killed"
        if reg.broker_id not in gone:
            send(reg.pid, signal.SIGKILL)
    gone |= wait_dead(state, [r.broker_id for r in live if r.broker_id not in gone], timeout)
    for reg in live:
        if reg.broker_id not in gone:
            outcome[reg.broker_id] = "still running"
    return outcome


def terminate(pid: int) -> None:
    """SIGTERM, then SIGCONT: a paused broker must run to act on the request to stop."""
    send(pid, signal.SIGTERM)
    send(pid, signal.SIGCONT)


def wait_dead(state: ClusterView, broker_ids: list[int], timeout: float) -> set[int]:
    """The brokers among `broker_ids` whose process is gone (lock released) within `timeout`."""
    deadline = time.monotonic() + timeout
    pending = set(broker_ids)
    while True:
        pending = {i for i in pending if state.is_alive(i)}
        if not pending or time.monotonic() > deadline:
            return set(broker_ids) - pending
        time.sleep(POLL_S)


def send(pid: int, sig: int) -> None:
    """A signal to a broker process that may have exited since it was looked up."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
