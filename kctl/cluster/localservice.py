"""The local cluster's schema registry daemon (`python -m schemaregistry`), started and stopped
with the brokers.

Its files are under `<cluster>/schema-registry/`: `registry.log`, `port` (kept so its URL
survives a restart) and `registry.lock`, which the running registry holds locked with its pid
and URL in it. As with brokers, liveness is that lock, never a pid check.
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

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

HOST = "127.0.0.1"
BIND_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.02


@dataclass(frozen=True)
class RunningRegistry:
    pid: int
    url: str


def directory(cluster_dir: Path) -> Path:
    return Path(cluster_dir) / "schema-registry"


def running(cluster_dir: Path) -> RunningRegistry | None:
    """The registry holding the lock, or None when none runs."""
    lock = directory(cluster_dir) / "registry.lock"
    try:
        with open(lock) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                info = json.loads(handle.read() or "{}")
                return RunningRegistry(int(info.get("pid", 0)), str(info.get("url", "")))
            return None
    except (FileNotFoundError, ValueError):
        return None


@dataclass
class StartingRegistry:
    """A registry process just started; `ready()` waits until its port is bound (it answers
    once it has read the `_schemas` topic; a client connecting before then waits for that)."""

    process: subprocess.Popen[bytes] | None  # None: it was already running
    url: str
    port: int
    log: Path

    def ready(self) -> RunningRegistry:
        if self.process is None:
            return RunningRegistry(0, self.url)
        _wait_bound(self.process, self.port, self.log)
        return RunningRegistry(self.process.pid, self.url)


def start(
    cluster_dir: Path, bootstrap: str, client_config_file: Path | None, authenticate_users: bool = False
) -> StartingRegistry:
    """Start the registry unless it runs; it finds the brokers by itself once they are up, so
    it can be started beside them. On a secured cluster it connects with the super user's
    settings (`client_config_file`) and, with SASL, asks its own users to log in as the
    cluster's users (HTTP basic auth)."""
    current = running(cluster_dir)
    if current is not None:
        return StartingRegistry(None, current.url, 0, Path())
    home = directory(cluster_dir)
    home.mkdir(parents=True, exist_ok=True)
    port = _port(home)
    argv = [
        sys.executable,
        "-m",
        "schemaregistry",
        "--bootstrap",
        bootstrap,
        "--host",
        HOST,
        "--port",
        str(port),
    ]
    argv += ["--lock-file", str(home / "registry.lock")]
    if client_config_file is not None:
        argv += ["--client-config-file", str(client_config_file)]
    if authenticate_users:
        argv.append("--authenticate-users")
    with open(home / "registry.log", "ab") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    return StartingRegistry(process, f"http://{HOST}:{port}", port, home / "registry.log")


def _port(home: Path) -> int:
    """The registry's port: the one it had, else a free one, remembered."""
    remembered = home / "port"
    if remembered.exists():
        return int(remembered.read_text())
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port = int(sock.getsockname()[1])
    remembered.write_text(f"{port}\n")
    return port


def _wait_bound(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + BIND_TIMEOUT_S
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex((HOST, port)) == 0:
                return
        if process.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-5:])
            raise KctlError(f"the schema registry exited with {process.returncode}:\n{tail}", ExitCode.ERROR)
        time.sleep(POLL_S)
    raise KctlError(f"the schema registry did not listen on port {port} within {BIND_TIMEOUT_S:.0f} s")


def stop(cluster_dir: Path, timeout: float = STOP_TIMEOUT_S) -> str:
    """SIGTERM the registry, SIGKILL it if it has not stopped within `timeout`: the outcome."""
    current = running(cluster_dir)
    if current is None:
        return "not running"
    for sig, outcome in ((signal.SIGTERM, "stopped"), (signal.SIGKILL, "killed")):
        try:
            os.kill(current.pid, sig)
        except ProcessLookupError:
            return outcome
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if running(cluster_dir) is None:
                return outcome
            time.sleep(POLL_S)
    return "still running"
