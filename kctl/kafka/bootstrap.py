"""Which cluster a command talks to.

Precedence, highest first: `-b/--bootstrap HOST:PORT[,...]`, then `$KCTL_BOOTSTRAP`, then the
local cluster in `--dir` / `$KCTL_HOME` / `~/.kctl` (the addresses of its live brokers). The
explicit forms come first so kctl drives any Kafka-compatible cluster the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:
    from brokerd.state.cluster_plan import ClusterPlan
    from brokerd.state.cluster_view import ClusterView

BOOTSTRAP_ENV = "KCTL_BOOTSTRAP"
HOME_ENV = "KCTL_HOME"


@dataclass(frozen=True)
class Bootstrap:
    servers: str
    source: str  # "flag", "env" or "local"
    cluster_dir: Path  # the local cluster directory, consulted even for -b (see topic describe)


def resolve_cluster_dir(option: Path | None, env: Mapping[str, str] = os.environ) -> Path:
    if option is not None:
        return option.expanduser()
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser()
    return Path.home() / ".kctl"


def resolve_bootstrap(flag: str | None, cluster_dir: Path, env: Mapping[str, str] = os.environ) -> Bootstrap:
    if flag:
        return Bootstrap(_validated(flag, "-b/--bootstrap"), "flag", cluster_dir)
    if env.get(BOOTSTRAP_ENV):
        return Bootstrap(_validated(env[BOOTSTRAP_ENV], BOOTSTRAP_ENV), "env", cluster_dir)
    return Bootstrap(local_servers(cluster_dir), "local", cluster_dir)


def local_state(cluster_dir: Path, alternative: str = "") -> ClusterView:
    """The state of the local cluster in `cluster_dir`, to read; exit 3 when the directory
    holds none, saying how to start one (and the `alternative` to doing so, if any)."""
    from brokerd.state.cluster_view import open_view  # when a command runs, not for --help

    return _existing(open_view(cluster_dir), alternative)


_Existing = TypeVar("_Existing", bound="ClusterPlan | ClusterView")


def _existing(state: _Existing, alternative: str) -> _Existing:
    if not state.exists():
        raise KctlError(
            f"no cluster in {state.cluster_dir}: start one with `kctl cluster up`{alternative}",
            ExitCode.UNREACHABLE,
        )
    return state


def local_servers(cluster_dir: Path) -> str:
    """HOST:PORT of every live broker of the local cluster, or a KctlError saying what to do."""
    from brokerd.state.faults import CLIENTS
    from brokerd.state.local_brokers import LocalBrokers  # not the metadata log's modules

    alternative = f", or pass -b HOST:PORT (or set {BOOTSTRAP_ENV})"
    state = _existing(LocalBrokers(cluster_dir), alternative)

    unreachable = {b for sender, b in state.network_faults().cuts if sender == CLIENTS}
    brokers = [b for b in state.brokers() if b.alive]
    # a broker cut off from clients (kctl broker isolate) would only keep librdkafka waiting
    live = [f"{b.host}:{b.port}" for b in brokers if b.broker_id not in unreachable] or [
        f"{b.host}:{b.port}" for b in brokers
    ]
    if not live:
        raise KctlError(
            f"the cluster in {cluster_dir} is not running: start it with `kctl cluster up`",
            ExitCode.UNREACHABLE,
        )
    return ",".join(live)


def _validated(servers: str, origin: str) -> str:
    """Reject text that is not HOST:PORT[,HOST:PORT...] before librdkafka retries it forever."""
    for address in servers.split(","):
        host, sep, port = address.strip().rpartition(":")
        if not (sep and host and port.isdigit() and 0 < int(port) < 65536):
            raise KctlError(
                f"invalid bootstrap address {address.strip()!r} in {origin}: "
                "expected HOST:PORT[,HOST:PORT...]",
                ExitCode.INVALID_INPUT,
            )
    return ",".join(a.strip() for a in servers.split(","))
