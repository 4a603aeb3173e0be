"""Broker settings of a local cluster: what `cluster up -o` asked for, remembered for restarts.

They live in `<dir>/kctl.json`, beside `state/` (which only brokerd.state opens), so that a
later `kctl cluster up` or `kctl broker start 2` starts each broker the way the cluster was
first started: a class that set a short session timeout keeps it after a broker is killed.

kctl adds one default of its own, default.replication.factor = min(3, brokers): a local
multi-broker cluster exists to show replication, so its topics are replicated unless the
user says otherwise.

kctl.json also remembers the cluster's security protocol (`cluster up --security-protocol`),
from which each broker's `listeners` is derived when it starts (kctl.cluster.securecluster).
"""

from __future__ import annotations

import json
from pathlib import Path

from brokerd.atomic_file import atomic_write
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.keyvalue import parse_pairs

FILE_NAME = "kctl.json"
REPLICATION_FACTOR = "default.replication.factor"
SESSION_TIMEOUT = "broker.session.timeout.ms"
PLAINTEXT = "PLAINTEXT"
MAX_DEFAULT_REPLICATION = 3


def parse(items: list[str] | None) -> dict[str, str]:
    """`-o name=value` options, checked against brokerd's own table before any broker starts."""
    settings = dict(parse_pairs(items, "-o/--broker-config"))
    if not settings:
        return settings
    # brokerd's table of configs pulls in its storage layer: only for clusters given -o
    from brokerd.config import BROKER_DEFAULTS, BrokerConfig

    try:
        BrokerConfig(0, Path(), 0, overrides=settings)
    except ValueError as exc:
        raise KctlError(
            f"{exc}; broker configs are: {', '.join(sorted(BROKER_DEFAULTS))}", ExitCode.INVALID_INPUT
        ) from None
    return settings


def remembered(cluster_dir: Path) -> dict[str, str]:
    """The settings the cluster was started with ({} for a cluster kctl did not start)."""
    return _read(cluster_dir)["broker_config"]


def security_protocol(cluster_dir: Path) -> str:
    """The protocol of the cluster's listeners (PLAINTEXT for a cluster kctl did not start)."""
    return _read(cluster_dir)["security_protocol"]


def remember(cluster_dir: Path, settings: dict[str, str], protocol: str = PLAINTEXT) -> None:
    doc = {"broker_config": dict(sorted(settings.items())), "security_protocol": protocol}
    atomic_write(cluster_dir / FILE_NAME, (json.dumps(doc, indent=1) + "\n").encode())


def _read(cluster_dir: Path) -> dict:
    path = cluster_dir / FILE_NAME
    try:
        doc = json.loads(path.read_text())
        return {
            "broker_config": dict(doc["broker_config"]),
            "security_protocol": str(doc.get("security_protocol", PLAINTEXT)),
        }
    except FileNotFoundError:
        return {"broker_config": {}, "security_protocol": PLAINTEXT}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise KctlError(f"cannot read {path}: {exc}; fix or remove it", ExitCode.ERROR) from None


def effective(settings: dict[str, str], brokers: int) -> dict[str, str]:
    """What each brokerd gets: kctl's defaults for a cluster of this size, then the user's."""
    defaults = {REPLICATION_FACTOR: str(min(MAX_DEFAULT_REPLICATION, brokers))} if brokers > 1 else {}
    return {**defaults, **settings}


def session_timeout_s(cluster_dir: Path) -> float:
    """broker.session.timeout.ms of the cluster: a lease older than this means 'paused'."""
    from brokerd.config import BROKER_DEFAULTS

    value = remembered(cluster_dir).get(SESSION_TIMEOUT, BROKER_DEFAULTS[SESSION_TIMEOUT][0])
    return int(value) / 1000
