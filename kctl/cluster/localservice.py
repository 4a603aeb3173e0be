"""The HTTP services of a local cluster (its schema registry, its REST proxy, its connect
worker): daemons beside the brokers, each a `python -m MODULE` of httpservice's making. The
registry and the proxy start with the brokers, the worker with `kctl connect up`; all stop
with them.

A service's files are under `<cluster>/<name>/`: its log, `port` (kept so its URL survives a
restart) and `service.lock`, which the running service holds locked with its pid and URL in it.
As with brokers, liveness is that lock, never a pid check.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from httpservice.daemon import EXIT_UNREACHABLE
from kctl.cluster import ports
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

HOST = "127.0.0.1"
BIND_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.02
ANSWER_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class Service:
    title: str  # how messages name it
    module: str  # what `python -m` runs
    directory_name: str  # its folder in the cluster directory
    url_env: str  # where kctl and scripts find its URL


SCHEMA_REGISTRY = Service("schema registry", "schemaregistry", "schema-registry", "KCTL_SCHEMA_REGISTRY_URL")
REST_PROXY = Service("REST proxy", "restproxy", "rest-proxy", "KCTL_REST_PROXY_URL")
CONNECT = Service("connect worker", "connect", "connect", "KCTL_CONNECT_URL")  # `kctl connect up`
SERVICES = (SCHEMA_REGISTRY, REST_PROXY, CONNECT)


@dataclass(frozen=True)
class RunningService:
    pid: int
    url: str


def directory(cluster_dir: Path, service: Service) -> Path:
    return Path(cluster_dir) / service.directory_name


def running(cluster_dir: Path, service: Service) -> RunningService | None:
    """The service holding the lock, or None when none runs."""
    lock = directory(cluster_dir, service) / "service.lock"
    try:
        with open(lock) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                info = json.loads(handle.read() or "{}")
                return RunningService(int(info.get("pid", 0)), str(info.get("url", "")))
            return None
    except (FileNotFoundError, ValueError):
        return None


@dataclass
class StartingService:
    """A service process just started; `ready()` waits until its port is bound (it answers
    once it is ready; a client connecting before then waits for that)."""

    service: Service
    process: subprocess.Popen[bytes] | None  # None: it was already running
    url: str
    port: int
    log: Path

    def ready(self) -> RunningService:
        if self.process is None:
            return RunningService(0, self.url)
        _wait_bound(self)
        return RunningService(self.process.pid, self.url)

    def serving(self, bootstrap: str) -> RunningService:
        """Ready, and answering: a service binds its port before it waits for its cluster
        (CLUSTER_WAIT_S), so one started alone is not up until it has reached the brokers.
        One that gives up on them is refused here with exit 3, not left to fail requests; one
        that exits for another reason (its log's last line says which) with exit 1."""
        running = self.ready()
        if self.process is None:
            return running
        while self.process.poll() is None:
            if _answers(self.url):
                return running
        why = _last_line(self.log)
        if self.process.returncode == EXIT_UNREACHABLE:
            raise KctlError(
                f"the {self.service.title} could not reach the cluster at {bootstrap}: {why}",
                ExitCode.UNREACHABLE,
            )
        raise KctlError(
            f"the {self.service.title} exited with {self.process.returncode}: {why}",
            ExitCode.ERROR,
        )


def start(
    cluster_dir: Path,
    service: Service,
    bootstrap: str,
    client_config_file: Path | None,
    authenticate_users: bool = False,
    extra_args: tuple[str, ...] = (),
    port: int | None = None,
) -> StartingService:
    """Start the service unless it runs; it finds the brokers by itself once they are up, so it
    can be started beside them. On a secured cluster it connects with the super user's settings
    (`client_config_file`) and, with SASL, asks its own users to log in as the cluster's users
    (HTTP basic auth). `port` replaces the port it had."""
    current = running(cluster_dir, service)
    if current is not None:
        return StartingService(service, None, current.url, 0, Path())
    home = directory(cluster_dir, service)
    home.mkdir(parents=True, exist_ok=True)
    port = _port(home, port)
    argv = [
        sys.executable,
        "-m",
        service.module,
        "--bootstrap",
        bootstrap,
        "--host",
        HOST,
        "--port",
        str(port),
    ]
    argv += ["--lock-file", str(home / "service.lock")]
    if client_config_file is not None:
        argv += ["--client-config-file", str(client_config_file)]
    if authenticate_users:
        argv.append("--authenticate-users")
    argv += extra_args
    log = home / f"{service.directory_name}.log"
    with open(log, "ab") as output:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    return StartingService(service, process, f"http://{HOST}:{port}", port, log)


def _answers(url: str) -> bool:
    """Whether the service at `url` answers an HTTP request within ANSWER_TIMEOUT_S (any
    status: a 404 is an answer); one that has bound its port but not yet served keeps the
    connection waiting."""
    import http.client
    from urllib.parse import urlsplit

    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname or HOST, address.port, timeout=ANSWER_TIMEOUT_S)
    try:
        connection.request("GET", "/")
        connection.getresponse().read()
        return True
    except OSError:  # timed out, reset or refused: not serving yet
        time.sleep(POLL_S)
        return False
    finally:
        connection.close()


def _last_line(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()
    return lines[-1] if lines else "nothing in its log"


def _port(home: Path, requested: int | None = None) -> int:
    """The service's port: the one asked for, else the one it had, else a free one; remembered."""
    remembered = home / "port"
    if requested is None and remembered.exists():
        return int(remembered.read_text())
    port = requested
    if port is None:
        port = ports.free_ports(1)[0]
    remembered.write_text(f"{port}\n")
    return port


def _wait_bound(starting: StartingService) -> None:
    assert starting.process is not None
    deadline = time.monotonic() + BIND_TIMEOUT_S
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex((HOST, starting.port)) == 0:
                return
        if starting.process.poll() is not None:
            tail = "\n".join(starting.log.read_text(errors="replace").splitlines()[-5:])
            raise KctlError(
                f"the {starting.service.title} exited with {starting.process.returncode}:\n{tail}",
                ExitCode.ERROR,
            )
        time.sleep(POLL_S)
    raise KctlError(
        f"the {starting.service.title} did not listen on port {starting.port} within {BIND_TIMEOUT_S:.0f} s"
    )


def stop(cluster_dir: Path, service: Service, timeout: float = STOP_TIMEOUT_S) -> str:
    """SIGTERM the service, SIGKILL it if it has not stopped within `timeout`: the outcome."""
    current = running(cluster_dir, service)
    if current is None:
        return "not running"
    for sig, outcome in ((signal.SIGTERM, "stopped"), (signal.SIGKILL, "killed")):
        try:
            os.kill(current.pid, sig)
        except ProcessLookupError:
            return outcome
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if running(cluster_dir, service) is None:
                return outcome
            time.sleep(POLL_S)
    return "still running"
