"""What a request handler may use of the broker that runs it (Kafka's KafkaApis is given
its managers the same way), split by concern: each part below is a small Protocol of its own.

Every handler is ``async def handle(services: BrokerServices, request: Request) -> dict | None``
(brokerd/api/request.py's ``Handler``). The broker builds one object per concern from its
parts and hands the handlers those, never itself; a handler that needs fewer parts takes
those (the authorization helpers take the authorizer and the session), so its signature says
what it touches. Members are read-only properties: a handler uses the parts, it never
replaces them. The components' types are imported for the type checker only, so that this
module costs nothing at run time and imports no component the import contracts keep apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from brokerd.config import BrokerConfig
    from brokerd.controller import Controller
    from brokerd.coordinator.group_coordinator import GroupCoordinator
    from brokerd.coordinator.transaction_coordinator import TransactionCoordinator
    from brokerd.coordinator.txn_marker_writer import TxnMarkerAppender
    from brokerd.metadata.editor import TopicsEditor
    from brokerd.metadata.image import MetadataDelta, TopicImage
    from brokerd.ports import ProducerIdGenerator
    from brokerd.replica_manager import ReplicaManager
    from brokerd.security.scram_credentials import ScramCredentialStore
    from brokerd.security.standard_authorizer import StandardAuthorizer
    from brokerd.share.share_partition_manager import SharePartitionManager
    from brokerd.share.share_sessions import ShareSessionCache
    from brokerd.share.share_state_epochs import ShareStateEpochs

# An ACL binding or a client quota as the state directory stores it.
StoredEntry = dict[str, Any]


class LiveBroker(Protocol):
    """A registered broker as a client is told of it: its id and where it listens."""

    @property
    def broker_id(self) -> int: ...

    def endpoint(self, listener_name: str) -> tuple[str, int]:
        """Where it serves the named listener (clients are told the addresses of the
        listener they came in on)."""


class MetadataCache(Protocol):
    """What this broker knows of the cluster (Kafka's MetadataCache), and how to bring it
    up to date."""

    @property
    def topics(self) -> Mapping[str, TopicImage]:
        """Every topic, as of the last apply_metadata_delta."""

    @property
    def live_brokers(self) -> Sequence[LiveBroker]:
        """The brokers registered and heartbeating, as of the last refresh_registrations."""

    @property
    def listeners(self) -> list[Callable[[MetadataDelta], None]]:
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


class TransactionServices(Protocol):
    """Transactions: the coordinator of the transactional ids, the markers a partition
    leader appends, and producer ids for idempotent producers."""

    @property
    def coordinator(self) -> TransactionCoordinator: ...

    @property
    def markers(self) -> TxnMarkerAppender: ...

    @property
    def producer_ids(self) -> ProducerIdGenerator: ...


class ShareServices(Protocol):
    """Share groups' records (KIP-932), beside the replicas led here."""

    @property
    def partitions(self) -> SharePartitionManager:
        """The share partitions of the partitions led here: acquisition and acknowledgement."""

    @property
    def sessions(self) -> ShareSessionCache:
        """The share sessions of the members fetching from this broker."""

    @property
    def state_epochs(self) -> ShareStateEpochs:
        """What the leader of a __share_group_state partition appends: no snapshot older
        than the newest of its share partition."""


class AclStore(Protocol):
    """The ACL bindings as stored (the authorizer reads them; CreateAcls, DeleteAcls write)."""

    def update_acl_bindings(self) -> AbstractContextManager[list[StoredEntry]]:
        """Read-modify-write the ACL bindings under the write lock."""


class SecurityServices(Protocol):
    """Who may do what, and the SCRAM credentials clients authenticate with."""

    @property
    def authorizer(self) -> StandardAuthorizer: ...

    @property
    def scram_credentials(self) -> ScramCredentialStore: ...

    @property
    def acls(self) -> AclStore: ...


class ClientQuotaStore(Protocol):
    """The client quotas as stored (DescribeClientQuotas, AlterClientQuotas, and the
    throttles that enforce them)."""

    def client_quotas_version(self) -> tuple[int, int] | None:
        """The change detector for client quotas: one stat."""

    def client_quotas(self) -> list[StoredEntry]: ...

    def update_client_quotas(self) -> AbstractContextManager[list[StoredEntry]]:
        """Read-modify-write the client quotas under the write lock."""


class ConfigStore(Protocol):
    """The configs set on topics, brokers and groups (DescribeConfigs, AlterConfigs,
    IncrementalAlterConfigs)."""

    def topics(self) -> Mapping[str, TopicImage]:
        """Every topic as the metadata log has it now (a validate-only change reads this)."""

    def update_topic_configs(self) -> AbstractContextManager[TopicsEditor]:
        """Topic config changes under the write lock, as ConfigRecords of what changed."""

    def dynamic_broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """One broker's dynamic configs, or with None the cluster-wide defaults."""

    def update_dynamic_broker_configs(self, broker_id: int | None) -> AbstractContextManager[dict[str, str]]:
        """Read-modify-write one broker's (or the cluster-wide) dynamic configs."""

    def group_configs(self, group_id: str) -> dict[str, str]: ...

    def update_group_configs(self, group_id: str) -> AbstractContextManager[dict[str, str]]:
        """Read-modify-write one group's configs."""


class BrokerServices(Protocol):
    """The broker's parts a handler uses, one member per concern: its identity and
    settings, what it knows of the cluster, the replicas it hosts, the controller, the
    coordinators, security, and the quotas and configs stored for the cluster."""

    @property
    def broker_id(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def metadata(self) -> MetadataCache: ...

    @property
    def replicas(self) -> ReplicaManager: ...

    @property
    def controller(self) -> Controller: ...

    @property
    def groups(self) -> GroupCoordinator:
        """Every kind of group (classic, consumer, share), their committed offsets and group
        configs, on the group's coordinator."""

    @property
    def transactions(self) -> TransactionServices: ...

    @property
    def share(self) -> ShareServices: ...

    @property
    def security(self) -> SecurityServices: ...

    @property
    def quotas(self) -> ClientQuotaStore: ...

    @property
    def config_store(self) -> ConfigStore: ...
