"""Broker registrations and liveness: who runs, where it listens, and whether it still counts.

A broker registers in `brokers/<id>.json` and holds `brokers/<id>.lock` (an OS file lock)
while its process lives: the kernel releases the lock however the process dies, so a pid is
never trusted (pids are reused). A paused (SIGSTOP) process keeps its lock but stops renewing
its lease, `brokers/<id>.heartbeat`, and counts as dead after broker.session.timeout.ms, as a
KRaft broker whose heartbeats stop is fenced by the controller.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from brokerd.state.directory import JsonObject, StateDirectory, read_json, write_json

if TYPE_CHECKING:
    from filelock import FileLock


@dataclass
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    pid: int
    started_at: float
    shutting_down: bool = False
    alive: bool = False  # the process holds its liveness lock
    heartbeat_at: float = 0.0  # last heartbeat (wall clock); stale when the process is paused
    session_timeout_ms: int = 3000  # the broker's broker.session.timeout.ms
    # every listener: {"name", "host", "port", "security_protocol"}; host and port above
    # are the first one's
    listeners: list[JsonObject] = field(default_factory=list)

    def endpoint(self, listener_name: str) -> tuple[str, int]:
        """Where this broker serves the named listener (clients are told the addresses of
        the listener they came in on, as Kafka's advertised listeners)."""
        found = next((ln for ln in self.listeners if ln["name"] == listener_name), None)
        return (self.host, self.port) if found is None else (found["host"], found["port"])

    def is_live(self, session_timeout_s: float | None = None, now: float | None = None) -> bool:
        """Alive and heartbeating within broker.session.timeout.ms (by default the broker's
        own, as registered): eligible for leadership."""
        now = time.time() if now is None else now
        if session_timeout_s is None:
            session_timeout_s = self.session_timeout_ms / 1000
        return self.alive and now - self.heartbeat_at < session_timeout_s


class BrokerRegistrations(StateDirectory):
    def _broker_file(self, broker_id: int, suffix: str) -> Path:
        return self.dir / "brokers" / f"{broker_id}{suffix}"

    def register_broker(
        self,
        broker_id: int,
        host: str,
        port: int,
        session_timeout_ms: int,
        listeners: list[JsonObject] | None = None,
    ) -> FileLock:
        """Register this process as broker ``broker_id`` and return the liveness lock it holds.

        The lock is an OS file lock, so it is released by the kernel when the process dies,
        however it dies; a second process claiming the same id fails here.
        """
        from filelock import FileLock, Timeout  # brokers only: kctl's reads need no asyncio

        (self.dir / "brokers").mkdir(parents=True, exist_ok=True)
        # Probes (is_alive) hold the lock shared for microseconds: wait those out.
        liveness = FileLock(str(self._broker_file(broker_id, ".lock")), timeout=2)
        try:
            liveness.acquire()
        except Timeout as exc:
            raise RuntimeError(f"broker {broker_id} is already running") from exc
        registration = {
            "broker_id": broker_id,
            "host": host,
            "port": port,
            "pid": os.getpid(),
            "started_at": time.time(),
            "session_timeout_ms": session_timeout_ms,
            "listeners": listeners or [],
        }
        self.heartbeat(broker_id)  # first: a registration others can read is already live
        write_json(self._broker_file(broker_id, ".json"), registration)
        return liveness

    def heartbeat(self, broker_id: int) -> None:
        """Renew the broker's lease: a paused process stops renewing and is presumed dead, and
        so is one cut off from the quorum (QuorumUnreachable)."""
        self.require_quorum()
        path = self._broker_file(broker_id, ".heartbeat")
        try:
            os.utime(path)
        except FileNotFoundError:
            path.touch()

    def mark_shutting_down(self, broker_id: int) -> None:
        """Controlled shutdown: the controller moves leadership away from this broker. The
        broker's own file, so no lock: only the broker writes its registration."""
        path = self._broker_file(broker_id, ".json")
        write_json(path, dict(read_json(path), shutting_down=True))

    def is_alive(self, broker_id: int) -> bool:
        """True while some process holds the broker's liveness lock.

        The broker holds the lock exclusively; a probe asks for it shared, so probes never
        block each other (two at the same moment would otherwise each see the other's
        probe as a live broker) and a probe never holds the lock a broker is taking.
        """
        try:
            fd = os.open(self._broker_file(broker_id, ".lock"), os.O_RDONLY)
        except FileNotFoundError:
            return False  # never registered here
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # also drops the shared lock, if the probe took it
        return False

    def brokers(self) -> list[BrokerRegistration]:
        """Every registered broker, by id, with its liveness and last heartbeat."""
        found = (self._registration(path) for path in (self.dir / "brokers").glob("*.json"))
        return sorted((r for r in found if r is not None), key=lambda r: r.broker_id)

    def _registration(self, path: Path) -> BrokerRegistration | None:
        doc = read_json(path)
        if doc is None:
            return None  # unregistered between the listing and the read
        registration = BrokerRegistration(**doc)
        registration.alive = self.is_alive(registration.broker_id)
        try:
            registration.heartbeat_at = path.with_suffix(".heartbeat").stat().st_mtime
        except FileNotFoundError:
            pass
        return registration
