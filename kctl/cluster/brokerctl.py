"""Fault injection on one broker of the local cluster: kill, stop, start, pause, resume, throttle.

Each operation first looks the broker up in the state directory, so an unknown id or a broker
in the wrong state (killing a dead one, starting a running one) is one clear line and an exit
code, and a signal only ever goes to the pid of a process that holds the broker's lock.
"""

from __future__ import annotations

import re
import signal
from typing import TYPE_CHECKING

from kctl.cluster import brokerconfig, brokerview, localcluster
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView
    from kctl.cluster.brokerview import BrokerView

KILL_TIMEOUT_S = 5.0
UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "ki": 1024, "mi": 1024**2, "gi": 1024**3}
_BYTE_RATE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([kmg]i?)?b?\s*(?:/\s*s)?\s*", re.IGNORECASE)


def lookup(state: ClusterView, broker_id: int) -> BrokerView:
    """The broker's current view; an id the cluster never planned is exit 4."""
    views = brokerview.view(state)
    found = brokerview.find(views, broker_id)
    if found is None:
        ids = ", ".join(str(b.id) for b in views)
        raise KctlError(
            f"unknown broker {broker_id}: the cluster in {state.cluster_dir} has broker(s) {ids}",
            ExitCode.NOT_FOUND,
        )
    return found


def running(state: ClusterView, broker_id: int) -> tuple[BrokerView, int]:
    """The broker and the pid of its process to signal; a dead one is exit 6."""
    broker = lookup(state, broker_id)
    if broker.state == brokerview.DEAD or broker.pid is None:
        raise KctlError(
            f"broker {broker_id} is not running (start it with `kctl broker start {broker_id}`)",
            ExitCode.CONFLICT,
        )
    return broker, broker.pid


def kill(state: ClusterView, broker_id: int) -> BrokerView:
    """SIGKILL: the process dies at once, its lock is released, nothing is handed over."""
    broker, pid = running(state, broker_id)
    localcluster.send(pid, signal.SIGKILL)
    _wait_dead(state, broker, KILL_TIMEOUT_S, "after SIGKILL")
    return broker


def stop(state: ClusterView, broker_id: int, timeout: float) -> BrokerView:
    """SIGTERM: controlled shutdown (leaderships move first); waits until the process exits."""
    broker, pid = running(state, broker_id)
    localcluster.terminate(pid)
    _wait_dead(
        state, broker, timeout, f"within {timeout:g}s of SIGTERM; `kctl broker kill {broker_id}` ends it"
    )
    return broker


def pause(state: ClusterView, broker_id: int) -> BrokerView:
    """SIGSTOP: the process keeps its lock but stops renewing its lease."""
    broker, pid = running(state, broker_id)
    localcluster.send(pid, signal.SIGSTOP)
    return broker


def resume(state: ClusterView, broker_id: int) -> BrokerView:
    """SIGCONT: a paused broker runs again and finds out what it missed."""
    broker, pid = running(state, broker_id)
    localcluster.send(pid, signal.SIGCONT)
    return broker


def throttle(state: ClusterView, broker_id: int, bytes_per_s: int | None) -> BrokerView:
    """Slow what the broker copies from its leaders (None: full speed again). The broker
    applies it within a tick; a stopped broker applies it when started."""
    from brokerd.state.faults import InjectedFaults  # not for --help

    broker = lookup(state, broker_id)
    InjectedFaults(state.cluster_dir).set_replication_throttle(broker_id, bytes_per_s)
    return broker


def parse_byte_rate(text: str) -> int:
    """'500', '64KB', '64KiB/s', '1.5M': bytes per second (k, M, G are 1000s; Ki, Mi, Gi 1024s)."""
    found = _BYTE_RATE.fullmatch(text)
    rate = int(float(found[1]) * UNITS[(found[2] or "").lower()]) if found else 0
    if rate <= 0:
        raise KctlError(
            f"invalid rate {text!r}: expected bytes per second, e.g. 64KB/s, 1MiB or 50000",
            ExitCode.INVALID_INPUT,
        )
    return rate


def start(state: ClusterView, broker_id: int, ready_timeout: float | None = None) -> BrokerView:
    """Start one dead broker again, on its planned port, with its data and the cluster's
    settings, and wait until it answers, however long its recovery takes while it runs; one
    that exits is reported with its log. After `ready_timeout` seconds, if given, stop waiting
    (exit 3) and leave it to finish starting."""
    broker = lookup(state, broker_id)
    if broker.state != brokerview.DEAD:
        raise KctlError(
            f"broker {broker_id} is already running (pid {broker.pid}, {broker.state})", ExitCode.CONFLICT
        )
    planned = state.planned_brokers()
    settings = brokerconfig.effective(brokerconfig.remembered(state.cluster_dir), len(planned))
    localcluster.start_missing(state, {broker_id: planned[broker_id]}, settings, ready_timeout)
    return lookup(state, broker_id)


def _wait_dead(state: ClusterView, broker: BrokerView, timeout: float, what: str) -> None:
    if not localcluster.wait_dead(state, [broker.id], timeout):
        raise KctlError(f"broker {broker.id} (pid {broker.pid}) is still running {what}")
