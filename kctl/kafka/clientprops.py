"""The properties file a command's clients start from, before its `-X` settings.

A secured local cluster answers only clients that authenticate, so commands against it use
its super user's settings in `<cluster>/admin.properties` without being told: when neither
-b nor $KCTL_BOOTSTRAP is given, and when they name the local cluster's brokers (as the
`export KCTL_BOOTSTRAP=...` that `kctl cluster up` prints does). A cluster elsewhere gets
nothing from that file, so its credentials never travel to another cluster.

`--command-config FILE` (or $KCTL_COMMAND_CONFIG) names the file instead: librdkafka
`key=value` lines, the format of `kcat -F`, to act as another user or to reach a remote
secured cluster. `-X` settings override either.
"""

from __future__ import annotations

from pathlib import Path

from brokerd.security import client_properties
from kctl.kafka.bootstrap import Bootstrap

LOCAL_HOSTS = ("127.0.0.1", "localhost")


def for_bootstrap(bootstrap: Bootstrap, command_config: Path | None) -> dict[str, str]:
    """The settings of `command_config`, else the local cluster's admin.properties when the
    bootstrap is that cluster ({} for a PLAINTEXT one, which has none), else none."""
    if command_config is not None:
        return client_properties.read(command_config)
    if is_local(bootstrap):
        return client_properties.read(client_properties.path(bootstrap.cluster_dir))
    return {}


def is_local(bootstrap: Bootstrap) -> bool:
    """Whether every bootstrap address is a planned broker of the local cluster (by its own
    address, 127.0.1.ID, or by 127.0.0.1/localhost)."""
    if bootstrap.source == "local":
        return True
    from brokerd.state.cluster_plan import ClusterPlan, planned_host  # not for --help

    state = ClusterPlan(bootstrap.cluster_dir)
    if not state.exists():
        return False

    planned = state.planned_brokers()
    local = {f"{host}:{port}" for port in planned.values() for host in LOCAL_HOSTS}
    local |= {f"{planned_host(broker_id)}:{port}" for broker_id, port in planned.items()}
    return all(address in local for address in bootstrap.servers.split(","))
