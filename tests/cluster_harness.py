"""Real brokerd processes on free ports in a temporary directory, for integration tests."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from brokerd.state import ClusterState

START_TIMEOUT_S = 15.0

# Brokers are forked from one process per test worker that has imported brokerd once: an
# import costs about 0.45 s of CPU, which hundreds of broker starts paid again each time.
_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(["brokerd.launch", "tests.cluster_harness"])


# Brokers' ports come from below Linux's ephemeral range (32768-60999), where no client's
# outgoing connection can take one between its choice and the broker's bind, and from a
# slice of their own per pytest-xdist worker, so parallel workers never pick the same one.
PORT_SLICE = 1500
_worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % 8


def free_port() -> int:
    """A port no process listens on now, from this worker's slice of 20000-31999."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` different ports no process listens on now, from this worker's slice (chosen
    one by one, two brokers of a cluster could be given the same port and one fail to bind)."""
    first = 20000 + _worker * PORT_SLICE
    found: list[int] = []
    for port in random.sample(range(first, first + PORT_SLICE), PORT_SLICE):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
        if len(found) == count:
            return found
    raise AssertionError(f"no {count} free ports in {first}-{first + PORT_SLICE - 1}")


def wait_until(predicate, timeout: float, what: str, interval: float = 0.02):
    """Poll ``predicate`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def until_answered(make_request, accept, what: str, timeout: float = 15.0):
    """Repeat an async request until ``accept(response)`` (a coordinator may still be
    loading its partition); fail with ``what`` on timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        response = await make_request()
        if accept(response):
            return response
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@contextmanager
def running_cluster(
    cluster_dir: Path,
    brokers: int = 1,
    overrides: dict[str, str] | None = None,
    listener_protocol: str | None = None,
):
    """A started cluster for a module's tests, stopped on exit even if starting it failed
    half-way (some brokers already running)."""
    cluster = LocalCluster(cluster_dir, brokers, overrides, listener_protocol)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


class LocalCluster:
    """Starts, signals and stops the brokers of one cluster directory."""

    def __init__(
        self,
        cluster_dir: Path,
        brokers: int = 1,
        overrides: dict[str, str] | None = None,
        listener_protocol: str | None = None,
    ):
        self.dir = cluster_dir
        self.state = ClusterState(cluster_dir)
        self.overrides = overrides or {}
        self.listener_protocol = listener_protocol  # each broker's one listener, if not PLAINTEXT
        self.state.initialize(dict(enumerate(free_ports(brokers), start=1)))
        self.procs: dict[int, BrokerProcess] = {}

    @property
    def ports(self) -> dict[int, int]:
        return self.state.planned_brokers()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def start(self, broker_id: int | None = None) -> None:
        for bid in [broker_id] if broker_id is not None else list(self.ports):
            self.spawn(bid)
        for bid in [broker_id] if broker_id is not None else list(self.ports):
            self.wait_serving(bid)

    def spawn(self, broker_id: int) -> None:
        """Start a broker without waiting for it to serve."""
        argv = [
            "--cluster-dir",
            str(self.dir),
            "--broker-id",
            str(broker_id),
            "--port",
            str(self.ports[broker_id]),
        ]
        for name, value in self.overrides.items():
            argv += ["-o", f"{name}={value}"]
        if self.listener_protocol is not None:
            argv += ["-o", f"listeners={self.listener_protocol}://127.0.0.1:{self.ports[broker_id]}"]
        log_path = self.state.broker_dir(broker_id) / "broker.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.procs[broker_id] = BrokerProcess(argv, log_path)

    def wait_serving(self, broker_id: int) -> None:
        proc = self.procs[broker_id]

        def serving():
            if proc.poll() is not None:
                raise AssertionError(
                    f"broker {broker_id} exited with {proc.returncode}:\n" + self.log_tail(broker_id)
                )
            try:
                socket.create_connection(("127.0.0.1", self.ports[broker_id]), 0.2).close()
            except OSError:
                return False
            # The port opens and the liveness lock is taken before the registration is
            # written; other brokers count this one only once they can read that.
            reg = next((r for r in self.state.brokers() if r.broker_id == broker_id), None)
            return reg is not None and reg.pid == proc.pid and reg.is_live()

        wait_until(serving, START_TIMEOUT_S, f"broker {broker_id} to serve")

    def log_tail(self, broker_id: int, lines: int = 30) -> str:
        path = self.state.broker_dir(broker_id) / "broker.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def signal(self, broker_id: int, sig: int) -> None:
        self.procs[broker_id].send_signal(sig)

    def kill(self, broker_id: int) -> None:
        proc = self.procs[broker_id]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def stop(self, broker_id: int | None = None, timeout: float = 10.0) -> None:
        """Graceful SIGTERM, SIGKILL if it does not exit in time; resumes paused brokers first."""
        for bid in [broker_id] if broker_id is not None else list(self.procs):
            proc = self.procs[bid]
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.terminate()
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout)


def _serve(argv: list[str], log_path: str) -> None:
    """A broker process: brokerd's own entry point, its output appended to its log."""
    from brokerd.launch import output_to
    from brokerd.main import main

    output_to(log_path)
    sys.exit(main(argv))


class BrokerProcess:
    """One brokerd process forked from the test worker's forkserver, with the part of
    subprocess.Popen's interface the tests use (pid, poll, wait, signals, returncode)."""

    def __init__(self, argv: list[str], log_path: Path):
        # daemon: a worker that exits (or is interrupted) with brokers running stops them
        self._process = _FORKSERVER.Process(target=_serve, args=(argv, str(log_path)), daemon=True)
        self._process.start()
        self.pid: int = self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(f"broker {self.pid}", timeout or 0)
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
