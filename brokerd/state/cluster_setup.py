"""ClusterSetup: what kctl writes to make a local cluster.

`kctl cluster up` creates the state directory (its broker plan, the metadata log, each
broker's directory) and, for a secured cluster, the super user's SCRAM credentials before any
broker runs (Kafka's `kafka-storage format --add-scram`). Everything else kctl does to the
directory is read (ClusterView) or a change of the broker plan (ClusterPlan) or of injected
faults (InjectedFaults), so these writes have an interface of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from brokerd.state.cluster_view import ClusterView


class ClusterSetup(ClusterView, Protocol):
    """A cluster's state directory as `kctl cluster up` creates it."""

    def initialize(self, broker_ports: dict[int, int]) -> str: ...
    def bootstrap_scram_credential(
        self, user: str, mechanism: str, salt: bytes, stored_key: bytes, server_key: bytes, iterations: int
    ) -> None: ...


def open_setup(cluster_dir: Path) -> ClusterSetup:
    """The state directory of the cluster in ``cluster_dir``, to create.

    Creating a cluster writes every part of the directory (the plan, the metadata log, each
    broker's directory), which ClusterState does: it is the implementation, this the
    interface kctl sees."""
    from brokerd.state.cluster_state import ClusterState

    return ClusterState(cluster_dir)
