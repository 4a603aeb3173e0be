"""The parts a broker hands its request handlers, one object per concern of
brokerd/ports/services.py: brokerd/broker.py builds each from components it has already
made, so a handler reaches them through these and never holds the broker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brokerd.config import BrokerConfig
    from brokerd.controller import Controller
    from brokerd.coordinator.group_coordinator import GroupCoordinator
    from brokerd.coordinator.transaction_coordinator import TransactionCoordinator
    from brokerd.coordinator.txn_marker_writer import TxnMarkerAppender
    from brokerd.ports import ProducerIdGenerator
    from brokerd.ports.services import AclStore, ClientQuotaStore, ConfigStore, MetadataCache
    from brokerd.replica_manager import ReplicaManager
    from brokerd.security.scram_credentials import ScramCredentialStore
    from brokerd.security.standard_authorizer import StandardAuthorizer
    from brokerd.share.share_partition_manager import SharePartitionManager
    from brokerd.share.share_sessions import ShareSessionCache
    from brokerd.share.share_state_epochs import ShareStateEpochs


@dataclass(frozen=True)
class Transactions:
    """The TransactionServices port."""

    coordinator: TransactionCoordinator
    markers: TxnMarkerAppender
    producer_ids: ProducerIdGenerator


@dataclass(frozen=True)
class Share:
    """The ShareServices port."""

    partitions: SharePartitionManager
    sessions: ShareSessionCache
    state_epochs: ShareStateEpochs


@dataclass(frozen=True)
class Security:
    """The SecurityServices port."""

    authorizer: StandardAuthorizer
    scram_credentials: ScramCredentialStore
    acls: AclStore


@dataclass(frozen=True)
class HandlerServices:
    """The BrokerServices port: what build_handlers binds every handler to."""

    broker_id: int
    cluster_id: str
    config: BrokerConfig
    metadata: MetadataCache
    replicas: ReplicaManager
    controller: Controller
    groups: GroupCoordinator
    transactions: Transactions
    share: Share
    security: Security
    quotas: ClientQuotaStore
    config_store: ConfigStore
