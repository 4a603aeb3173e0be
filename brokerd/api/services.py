"""What a request handler may use of the broker that runs it (Kafka's KafkaApis is given
its managers the same way): exactly the parts below, each with its type.

Every handler is ``async def handle(services: BrokerServices, request: Request) -> dict | None``.
brokerd/broker.py's Broker has each of these parts and satisfies the Protocol structurally;
nothing below the broker imports or holds it. A handler that needs fewer parts takes those
(the authorization helpers take the authorizer and the session), so its signature says what
it touches. Members are read-only properties: a handler uses the parts, it never replaces
them. The types are imported for the type checker only, so that this module costs nothing at
run time and imports no component the import contracts keep apart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from brokerd.api.request import Request

if TYPE_CHECKING:
    from brokerd.config import BrokerConfig
    from brokerd.controller import Controller
    from brokerd.coordinator.group_coordinator import GroupCoordinator
    from brokerd.coordinator.transaction_coordinator import TransactionCoordinator
    from brokerd.coordinator.txn_marker_writer import TxnMarkerAppender
    from brokerd.metadata.image import MetadataDelta
    from brokerd.ports import ProducerIdGenerator
    from brokerd.replica_manager import ReplicaManager
    from brokerd.security.scram_credentials import ScramCredentialStore
    from brokerd.security.standard_authorizer import StandardAuthorizer
    from brokerd.share.share_partition_manager import SharePartitionManager
    from brokerd.share.share_sessions import ShareSessionCache
    from brokerd.share.share_state_epochs import ShareStateEpochs
    from brokerd.state import BrokerRegistration, ClusterState, TopicImage


class BrokerServices(Protocol):
    """The broker's parts a handler uses: its identity, settings and state directory, what it
    knows of the cluster, the replicas it hosts, the controller, the coordinators, security."""

    # -- who this broker is, its settings, the shared state directory ------------------------
    @property
    def broker_id(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def state(self) -> ClusterState: ...

    # -- what it knows of the cluster (Kafka's MetadataCache) --------------------------------
    @property
    def topics(self) -> Mapping[str, TopicImage]:
        """Every topic, as of the last apply_metadata_delta."""

    @property
    def live_brokers(self) -> Sequence[BrokerRegistration]:
        """The brokers registered and heartbeating, as of the last refresh_registrations."""

    @property
    def metadata_listeners(self) -> list[Callable[[MetadataDelta], None]]:
        """Told of every metadata delta this broker applies (the Metadata handler's cache)."""

    def apply_metadata_delta(self) -> None:
        """Apply the delta of the metadata written since the last look (a client may know of
        a change before this broker does)."""

    def refresh_registrations(self) -> list[int]:
        """Re-read which brokers are live; returns the ids of those not shutting down (for
        replica placement)."""

    def live_controller_id(self) -> int:
        """The controller to name to clients; -1 when none is live."""

    def auto_create_topic(self, name: str) -> TopicImage | None:
        """Create a topic a client asked for by name (auto.create.topics.enable, and the
        internal topics); None when another broker was asked to (only the controller creates)."""

    # -- what it hosts and decides ------------------------------------------------------------
    @property
    def replicas(self) -> ReplicaManager: ...

    @property
    def controller(self) -> Controller: ...

    # -- the coordinators ---------------------------------------------------------------------
    @property
    def groups(self) -> GroupCoordinator:
        """Every kind of group (classic, consumer, share), their committed offsets and group
        configs, on the group's coordinator."""

    @property
    def transactions(self) -> TransactionCoordinator: ...

    @property
    def txn_markers(self) -> TxnMarkerAppender: ...

    @property
    def producer_ids(self) -> ProducerIdGenerator: ...

    # -- share groups (KIP-932) -----------------------------------------------------------------
    @property
    def share_partitions(self) -> SharePartitionManager:
        """The share partitions of the partitions led here: acquisition and acknowledgement."""

    @property
    def share_sessions(self) -> ShareSessionCache:
        """The share sessions of the members fetching from this broker."""

    @property
    def share_state_epochs(self) -> ShareStateEpochs:
        """What the leader of a __share_group_state partition appends: no snapshot older
        than the newest of its share partition."""

    # -- security -----------------------------------------------------------------------------
    @property
    def authorizer(self) -> StandardAuthorizer: ...

    @property
    def scram_credentials(self) -> ScramCredentialStore: ...


# A request handler: a module's ``handle``, given the broker's services and the request.
Handler = Callable[[BrokerServices, Request], Awaitable[dict | None]]
