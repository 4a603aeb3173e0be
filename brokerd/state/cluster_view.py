"""ClusterView: what kctl reads of a cluster's state directory, and nothing it could write.

ClusterState serves the brokers, which read and write every part of the directory; kctl
shows the cluster (`kctl cluster status`, `kctl watch`, `kctl topic describe`, ...) and
reads it through this narrower interface. The few things kctl writes have writers of their
own: a new cluster (ClusterSetup, brokerd.state.cluster_setup), the broker plan (ClusterPlan)
and injected faults (InjectedFaults).

ClusterView is a Protocol: a ClusterState is one as well, and StateReader implements it with
the parts of ClusterState that hold what is read here (their methods, not copies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from brokerd.state.broker_registrations import BrokerRegistration, BrokerRegistrations
from brokerd.state.cluster_plan import ClusterPlan
from brokerd.state.controller_epoch import ControllerEpochs
from brokerd.state.directory import JsonObject
from brokerd.state.faults import InjectedFaults, NetworkFaults
from brokerd.state.metadata_store import MetadataStore
from brokerd.state.replica_status import ReplicaStatusFiles
from brokerd.state.security import SecurityFiles

if TYPE_CHECKING:
    from brokerd.metadata.image import TopicImage
    from brokerd.metadata.log import Observer

__all__ = ["BrokerRegistration", "ClusterView", "NetworkFaults", "StateReader", "open_view"]


class ClusterView(Protocol):
    """One cluster's state as kctl reads it (see each method's part of brokerd.state)."""

    @property
    def cluster_dir(self) -> Path: ...

    # the broker plan and the brokers' registrations
    def exists(self) -> bool: ...
    def cluster_id(self) -> str: ...
    def planned_brokers(self) -> dict[int, int]: ...
    def broker_dir(self, broker_id: int) -> Path: ...
    def brokers(self) -> list[BrokerRegistration]: ...
    def is_alive(self, broker_id: int) -> bool: ...

    # the controller, and faults in force
    def controller(self) -> tuple[int, int] | None: ...
    def fenced_controller(self) -> JsonObject | None: ...
    def network_faults(self) -> NetworkFaults: ...
    def replication_throttle(self, broker_id: int) -> int | None: ...

    # the metadata log
    def topics(self) -> Mapping[str, TopicImage]: ...
    def follow_metadata(self, observer: Observer) -> Callable[[], None]: ...

    # what each broker publishes of itself
    def replica_status(self) -> dict[int, dict[tuple[str, int], JsonObject]]: ...
    def share_status(self) -> dict[int, list[JsonObject]]: ...
    def security_events(self) -> list[JsonObject]: ...


class StateReader(
    ClusterPlan,
    BrokerRegistrations,
    ControllerEpochs,
    InjectedFaults,
    MetadataStore,
    ReplicaStatusFiles,
    SecurityFiles,
):
    """ClusterView over the state directory: the parts of ClusterState kctl reads (the
    metadata log's writers, the topic-request queue and producer ids are left out)."""

    def follow_metadata(self, observer: Observer) -> Callable[[], None]:
        """As MetadataStore.follow_metadata, on a log that exists: a cluster from before the
        metadata log has its `metadata.json` upgraded first, as any first read of it does."""
        self._open_metadata_log()
        return super().follow_metadata(observer)


def open_view(cluster_dir: Path) -> ClusterView:
    """The state directory of the cluster in ``cluster_dir``, to read."""
    return StateReader(cluster_dir)
