"""The narrow views of a broker that its components are given: every port, in one place.

The group and transaction coordinators, the transaction marker writer, the share partitions,
the replica fetchers and the ISR write path need a few things of the broker that runs them:
the replicas it hosts, what it knows of the cluster, the group configs in effect, and a way
to reach other brokers. Each gets exactly those, as the ports below, rather than the Broker
itself: the dependency is then visible in the signatures and the import graph, and the state
machines behind them can be tested in-process against fakes. brokerd/broker.py implements
the ports with its own parts and wires them in. What a request handler is given is in
brokerd/ports/services.py.

Settings are not a port: each component reads the few it needs once, at start, into a
frozen config of its own (GroupConfig, OffsetConfig, TransactionConfig), as Kafka does;
none of them can be altered dynamically.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from brokerd.replication.broker_client import BrokerClient
from brokerd.storage.partition_log import AppendInfo

if TYPE_CHECKING:
    from brokerd.metadata.registration import PartitionRegistration
    from brokerd.state import IsrProposal
    from brokerd.waiters import Waiters

TopicPartition = tuple[str, int]


class ReplicaLog(Protocol):
    """What a coordinator reads of a replica's log: the whole of it, once, when it becomes
    the leader of an internal topic's partition and rebuilds its cache from the records."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def read(self, offset: int, max_bytes: int) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``, about ``max_bytes`` of them."""


class HostedReplica(Protocol):
    """One replica hosted here as a coordinator uses it (Kafka's Partition): whether it
    leads, at which leader epoch (a transaction coordinator's epoch), its log, and appends
    as leader that return once the in-sync replicas confirm them."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def log(self) -> ReplicaLog: ...

    def append_as_leader(self, batch: bytes, acks: int) -> AppendInfo:
        """Append a record batch; NOT_LEADER_OR_FOLLOWER, or NOT_ENOUGH_REPLICAS for
        acks=-1 when the ISR is below min.insync.replicas."""

    def append_txn_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> AppendInfo:
        """End ``producer_id``'s transaction in this partition."""

    async def wait_for_ack(self, last_offset: int, timeout_s: float) -> None:
        """Return once every in-sync replica has ``last_offset``; REQUEST_TIMED_OUT, or
        NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas."""


class HostedReplicas(Protocol):
    """The replicas this broker hosts (Kafka's ReplicaManager)."""

    @property
    def partitions(self) -> Mapping[TopicPartition, HostedReplica]: ...

    def get_leader(self, topic: str, index: int) -> HostedReplica:
        """The replica, if this broker leads it; UNKNOWN_TOPIC_OR_PARTITION or
        NOT_LEADER_OR_FOLLOWER otherwise."""


class MetadataView(Protocol):
    """What this broker knows of the cluster from the metadata log and the registrations
    (Kafka's MetadataCache), as of its last look."""

    def has_topic(self, name: str) -> bool: ...

    def partition_leader(self, topic: str, index: int) -> int | None:
        """The leader's broker id (-1 for none); None when there is no such partition."""

    def live_broker_ids(self) -> set[int]: ...

    def broker_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where a registered broker was started (host and port of its first listener), so a
        connection to a broker that came back elsewhere is not reused; None if unknown."""

    def refresh(self) -> None:
        """Look again: apply the metadata written since the last look. A client may know of
        a leader change before this broker does, and a retry must see the current leaders."""


class BrokerClientFactory(Protocol):
    """A connection to another broker over the inter-broker listener, with its security;
    None when that broker is not registered."""

    def __call__(self, broker_id: int, client_id: str, timeout_s: float) -> BrokerClient | None: ...


class ProducerIdGenerator(Protocol):
    """Producer ids unique across the cluster and its restarts (Kafka's ProducerIdManager)."""

    def next_id(self) -> int: ...


class GroupConfigSource(Protocol):
    """The configs set on a group (Kafka's GROUP config resource), as strings; empty when
    none are set. brokerd/group_configs.py turns them into effective, typed values."""

    def group_configs(self, group_id: str) -> Mapping[str, str]: ...


class TopicPartitionCounts(Protocol):
    """Each existing topic's partition count, as this broker last read the metadata (the
    share group assignor's input)."""

    def partition_count(self, topic: str) -> int | None: ...


class ShareGroupTimeouts(Protocol):
    """A share group's session timeout and heartbeat interval in effect (its own group
    configs, else the broker's group.share.* settings)."""

    def share_session_timeout_ms(self, group_id: str) -> int: ...

    def share_heartbeat_interval_ms(self, group_id: str) -> int: ...


class TopicMetadataCatalog(Protocol):
    """Every topic's id and partition count, as this broker last read the metadata (the
    consumer group assignors' input)."""

    def topic_partitions(self) -> Mapping[str, tuple[uuid.UUID, int]]:
        """Every topic: name -> (topic id, partition count)."""


class ConsumerGroupTimeouts(Protocol):
    """A consumer group's session timeout and heartbeat interval in effect (its own group
    configs, else the broker's group.consumer.* settings)."""

    def consumer_session_timeout_ms(self, group_id: str) -> int: ...

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int: ...


class GroupsMetadata(MetadataView, TopicPartitionCounts, TopicMetadataCatalog, Protocol):
    """What the group coordinator knows of the cluster: the MetadataView, and each topic's
    partition count (share groups) and id (consumer groups)."""


class TxnOffsetsListener(Protocol):
    """Told when a marker lands on an offsets partition led here: the producer's pending
    transactional offset commits there become committed or are dropped
    (GroupCoordinator.on_txn_marker)."""

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None: ...


class LeaderLog(Protocol):
    """What a share partition reads of its data partition's log: where it starts, and which
    transactions were aborted (a read_committed share group skips their records)."""

    @property
    def log_start_offset(self) -> int: ...

    def aborted_transactions(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping the range."""


class LeaderReplica(Protocol):
    """What a share partition uses of the data partition it leads (brokerd/partition.py)."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    @property
    def log(self) -> LeaderLog: ...

    @property
    def waiters(self) -> Waiters: ...

    def read(
        self,
        offset: int,
        max_bytes: int,
        for_follower: bool = False,
        read_committed: bool = False,
        min_one_message: bool = True,
    ) -> bytes | memoryview: ...


class LeaderReplicas(Protocol):
    """The replicas this broker leads, as the share partitions find theirs."""

    def get_leader(self, topic: str, index: int) -> LeaderReplica:
        """The replica if this broker leads it; NOT_LEADER_OR_FOLLOWER or
        UNKNOWN_TOPIC_OR_PARTITION otherwise."""


class ShareGroupSettings(Protocol):
    """A share group's configs in effect (its own, else the broker's group.share.*)."""

    def share_record_lock_duration_ms(self, group_id: str) -> int: ...

    def share_delivery_count_limit(self, group_id: str) -> int: ...

    def share_auto_offset_reset(self, group_id: str) -> str: ...

    def share_isolation_level(self, group_id: str) -> str: ...


class IsrWriter(Protocol):
    """The state directory's compare-and-set of leaders' ISR changes (ClusterState)."""

    def alter_isrs(
        self, proposals: dict[TopicPartition, IsrProposal]
    ) -> dict[TopicPartition, PartitionRegistration | None]: ...
