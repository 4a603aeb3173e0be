"""What kctl says about each broker of a local cluster: alive, paused, isolated, shutting-down
or dead.

Liveness comes from the state directory, never from pids: a broker is alive while its process
holds its lock, which the kernel drops however the process dies. A broker that holds its lock
but has not renewed its lease within broker.session.timeout.ms is "paused" (SIGSTOP, or
starved): the rest of the cluster already treats it as dead, and that is what a class needs
to see next to the process that is still there; one a network fault cuts off from the
controller quorum is "isolated" (`kctl broker isolate`). `section` is the table that shows them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from brokerd.state.cluster_plan import planned_host
from kctl.cluster import brokerconfig
from kctl.shell.console import Section

if TYPE_CHECKING:
    from brokerd.state.cluster_view import BrokerRegistration, ClusterView

HOST = "127.0.0.1"
ALIVE = "alive"
PAUSED = "paused"
ISOLATED = "isolated"  # running, but cut off from the controller quorum (kctl broker isolate)
SHUTTING_DOWN = "shutting-down"
DEAD = "dead"


@dataclass
class BrokerView:
    """One planned broker as kctl reports it."""

    id: int
    host: str
    port: int
    pid: int | None
    state: str
    lease_age_s: float | None = None
    replication_throttle_bytes_per_s: int | None = None  # set by `kctl broker throttle`

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def to_json(self) -> dict:
        age = None if self.lease_age_s is None else round(self.lease_age_s, 1)
        return {
            "id": self.id,
            "host": self.host,
            "port": self.port,
            "pid": self.pid,
            "state": self.state,
            "lease_age_s": age,
            "replication_throttle_bytes_per_s": self.replication_throttle_bytes_per_s,
        }


def state_of(reg: BrokerRegistration | None, session_timeout_s: float, now: float) -> str:
    """Dead without a process; paused before shutting-down, since a frozen broker cannot
    act on its shutdown and the cluster has already written it off."""
    if reg is None or not reg.alive:
        return DEAD
    if not reg.is_live(session_timeout_s, now):
        return PAUSED
    return SHUTTING_DOWN if reg.shutting_down else ALIVE


def view(state: ClusterView) -> list[BrokerView]:
    """Every planned broker, with what its registration (if it ever registered) says."""
    session_timeout_s = brokerconfig.session_timeout_s(state.cluster_dir)
    now = time.time()
    regs = {r.broker_id: r for r in state.brokers()}
    views = []
    cut_off = state.network_faults().cut_from_quorum
    for broker_id, port in sorted(state.planned_brokers().items()):
        reg = regs.get(broker_id)
        timeout_s = reg.session_timeout_ms / 1000 if reg else session_timeout_s
        status = state_of(reg, timeout_s, now)
        if status != DEAD and broker_id in cut_off:
            status = ISOLATED
        process = None if status == DEAD else reg  # the registration of a running process
        views.append(
            BrokerView(
                broker_id,
                reg.host if reg else planned_host(broker_id),
                port,
                None if process is None else process.pid,
                status,
                None if process is None else max(0.0, now - process.heartbeat_at),
                state.replication_throttle(broker_id),
            )
        )
    return views


def find(views: list[BrokerView], broker_id: int) -> BrokerView | None:
    return next((b for b in views if b.id == broker_id), None)


def controller_json(controller: tuple[int, int] | None) -> dict | None:
    return None if controller is None else {"broker_id": controller[0], "epoch": controller[1]}


_STYLES = {
    ALIVE: "green",
    PAUSED: "bold yellow",
    ISOLATED: "bold magenta",
    SHUTTING_DOWN: "yellow",
    DEAD: "bold red",
}


def section(views: list[BrokerView], controller: tuple[int, int] | None, title: str | None = None) -> Section:
    """The broker table of `kctl cluster status`, `kctl broker list` and `kctl watch`; the
    controller is marked with '*', as in `rpk cluster info`. A dead broker is red."""
    if controller is not None:
        title = f"{title + ' - ' if title else ''}controller: broker {controller[0]} (epoch {controller[1]})"
    rows = []
    for b in views:
        marker = "*" if controller is not None and b.id == controller[0] else ""
        lease = None if b.lease_age_s is None else f"{b.lease_age_s:.1f}s"
        throttle = (
            None
            if b.replication_throttle_bytes_per_s is None
            else Text(f"{b.replication_throttle_bytes_per_s}B/s", style="yellow")
        )
        rows.append(
            [
                f"{b.id}{marker}",
                b.address,
                b.pid,
                Text(b.state, style=_STYLES.get(b.state, "green")),
                lease,
                throttle,
            ]
        )
    return Section(title, ["id", "address", "pid", "state", "lease-age", "throttle"], rows)
