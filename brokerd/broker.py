"""A broker: state directory registration, controller candidacy, hosted replicas, the listener."""

from __future__ import annotations

import asyncio
import logging
import resource
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

from filelock import FileLock

from brokerd.api import build_handlers
from brokerd.auto_topic_creation import AutoTopicCreationManager
from brokerd.config import BrokerConfig
from brokerd.controller import Controller, LeaderRebalance
from brokerd.coordinator.group_coordinator import GroupCoordinator
from brokerd.coordinator.transaction_coordinator import TransactionConfig, TransactionCoordinator
from brokerd.coordinator.txn_marker_writer import TransactionMarkerWriter, TxnMarkerAppender
from brokerd.group_configs import GroupConfigs
from brokerd.handler_services import HandlerServices, Security, Share, Transactions
from brokerd.metadata.image import MetadataDelta
from brokerd.producer_ids import ProducerIdManager
from brokerd.replica_manager import ReplicaManager
from brokerd.replication.alter_partition import AlterPartitionManager
from brokerd.replication.broker_client import BrokerClient, source_address
from brokerd.replication.fetcher_manager import ReplicaFetcherManager
from brokerd.security.audit import SecurityAudit
from brokerd.security.authenticator import ConnectionAuthenticator
from brokerd.security.inter_broker import InterBrokerSecurity
from brokerd.security.listeners import (
    Listener,
    parse_listeners,
    parse_protocol_map,
    server_context,
)
from brokerd.security.sasl_server import SaslServer
from brokerd.security.scram_credentials import ScramCredentialStore
from brokerd.security.standard_authorizer import StandardAuthorizer
from brokerd.server import KafkaServer
from brokerd.share.settings import ShareSettings
from brokerd.share.share_partition_manager import SharePartitionManager
from brokerd.share.share_sessions import ShareSessionCache
from brokerd.share.share_state_epochs import ShareStateEpochs
from brokerd.share.state_persister import ShareStateTopic
from brokerd.state import BrokerRegistration, ClusterState, TopicImage
from brokerd.state.directory import QuorumUnreachable

log = logging.getLogger(__name__)

TICK_S = 0.1
# A replica in use maps its active segment's log (one descriptor; its indexes are kept in
# memory); connections, the state directory and Python keep the rest.
DESCRIPTORS_PER_REPLICA = 1
DESCRIPTORS_RESERVED = 1024


def replicas_within_open_file_limit() -> int:
    """How many replicas this process can host before it runs out of file descriptors."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 2**31 - 1
    return max(0, (soft - DESCRIPTORS_RESERVED) // DESCRIPTORS_PER_REPLICA)


STATUS_PUBLISH_S = 0.5


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.state = ClusterState(config.cluster_dir, member=config.broker_id)
        if not self.state.exists():
            raise RuntimeError(f"{config.cluster_dir} holds no cluster state (run kctl cluster up)")
        self.cluster_id = self.state.cluster_id()
        self.session_timeout_s = config.get("broker.session.timeout.ms") / 1000
        self.controller = Controller(
            self.broker_id,
            self.state,
            self.session_timeout_s,
            LeaderRebalance.from_config(config),
            config.log_defaults,
            lambda: min(config.get("max.broker.partitions"), replicas_within_open_file_limit()),
        )
        self.metadata = BrokerMetadataView(self)
        self.topic_creation = AutoTopicCreationManager(config, self.controller, self.state, self.metadata)
        self.alter_partition = AlterPartitionManager(
            self.state, self.metadata.live_broker_ids, self.metadata.apply_metadata_delta
        )
        self.replicas = ReplicaManager(
            self.broker_id, self.state.broker_dir(self.broker_id) / "data", self.alter_partition.submit
        )
        self.producer_ids = ProducerIdManager(self.state)
        self._wire_ports()
        self.topics: Mapping[str, TopicImage] = {}
        self.registrations: list[BrokerRegistration] = []
        self.live_brokers: list[BrokerRegistration] = []
        # told of every metadata delta applied here (the Metadata handler's topic cache)
        self.metadata_listeners: list[Callable[[MetadataDelta], None]] = []
        self._init_security(config)
        handlers = build_handlers(self._handler_services())
        self.servers = [
            KafkaServer(
                handlers,
                listener,
                config.get("socket.request.max.bytes"),
                config.get("sasl.server.max.receive.size"),
                self._ssl_context(listener),
                self._authenticator,
            )
            for listener in self.listeners
        ]
        self._liveness: FileLock | None = None  # held while registered (see register_broker)
        self._quorum_lost = False
        self._named_controller = -1
        self._unmaintained: list[MetadataDelta] = []  # applied since the last controller round
        self._tasks: list[asyncio.Task] = []
        self._stopping = threading.Event()

    def _wire_ports(self) -> None:
        """The replica fetchers and the coordinators get the ports they use (brokerd/ports/__init__.py),
        implemented by this broker's parts, never the broker itself."""
        metadata = self.metadata
        self.fetchers = ReplicaFetcherManager(self.broker_id, self.broker_client)
        self.group_configs = GroupConfigs(self.config, self.state)
        # every kind of group, classic, consumer (KIP-848) and share (KIP-932), and the offsets
        self.groups = GroupCoordinator.create(
            self.broker_id,
            self.config,
            self.replicas,
            metadata,
            self.group_configs,
            share_member_removed=self._share_member_removed,
        )
        # KIP-932: share partitions beside the replicas
        self.share_sessions = ShareSessionCache(
            self.config.get("group.share.max.share.sessions"),
            self.config.get("group.share.max.session.timeout.ms") / 1000,
        )
        share_settings = ShareSettings(self.group_configs, self.config)
        self.share_partitions = SharePartitionManager(
            self.replicas,
            ShareStateTopic(
                self.config.get("share.coordinator.state.topic.num.partitions"),
                metadata,
                self.broker_client,
                self.topic_creation.create_topic,
            ),
            share_settings,
            share_settings.max_record_locks,
            refresh_metadata=self.apply_metadata_delta,
        )
        # what the leader of a __share_group_state partition admits (Kafka's share coordinator)
        self.share_state_epochs = ShareStateEpochs(self.replicas)
        self.txn_markers = TxnMarkerAppender(self.replicas, self.groups)
        self.transactions = TransactionCoordinator(
            self.broker_id,
            TransactionConfig.from_config(self.config),
            self.replicas,
            metadata,
            self.producer_ids,
            TransactionMarkerWriter(self.broker_id, metadata, self.broker_client, self.txn_markers),
        )

    def _handler_services(self) -> HandlerServices:
        """What the request handlers are given: this broker's parts, by concern."""
        return HandlerServices(
            self.broker_id,
            self.cluster_id,
            self.config,
            self.metadata,
            self.replicas,
            self.controller,
            self.groups,
            Transactions(self.transactions, self.txn_markers, self.producer_ids),
            Share(self.share_partitions, self.share_sessions, self.share_state_epochs),
            Security(self.authorizer, self.scram_credentials, self.state),
            self.state,
            self.state,
        )

    def _share_member_removed(self, group_id: str, member_id: str) -> None:
        """A share group member was fenced (its session timed out): its share session here
        ends and what it held of the partitions led here is released (other leaders wait for
        its locks)."""
        self.share_sessions.close(group_id, member_id)
        self.share_partitions.release_member(group_id, member_id)

    def _init_security(self, config: BrokerConfig) -> None:
        """Listeners, credentials, the authorizer and how to reach other brokers; a setting
        that cannot work (an unknown listener name, a missing key file) stops the start."""
        protocols = parse_protocol_map(config.get("listener.security.protocol.map"))
        self.listeners = parse_listeners(
            config.get("listeners") or f"PLAINTEXT://{config.host}:{config.port}", protocols
        )
        inter_name = config.get("inter.broker.listener.name") or self.listeners[0].name
        inter = next((ln for ln in self.listeners if ln.name == inter_name.upper()), None)
        if inter is None:
            raise ValueError(f"inter.broker.listener.name {inter_name} is not a listener")
        self.inter_broker = InterBrokerSecurity(
            inter.name,
            inter.security_protocol,
            config.get("sasl.mechanism.inter.broker.protocol"),
            config.cluster_dir,
        )
        self.audit = SecurityAudit(self.broker_id)
        self.scram_credentials = ScramCredentialStore(self.state)
        self.authorizer = StandardAuthorizer(
            self.state,
            config.get("authorizer.class.name"),
            config.get("super.users"),
            config.get("allow.everyone.if.no.acl.found"),
            self.audit,
        )
        self._sasl_mechanisms = [
            m.strip().upper() for m in config.get("sasl.enabled.mechanisms").split(",") if m.strip()
        ]

    def _ssl_context(self, listener: Listener):
        if not listener.uses_tls:
            return None
        return server_context(
            self.config.get("ssl.keystore.location"),
            self.config.get("ssl.key.password"),
            self.config.get("ssl.truststore.location"),
            self.config.get("ssl.client.auth"),
        )

    def _authenticator(self, listener: Listener, client_host: str, ssl_object) -> ConnectionAuthenticator:
        return ConnectionAuthenticator(
            listener,
            client_host,
            ssl_object,
            lambda: SaslServer(self._sasl_mechanisms, self.scram_credentials),
            self.audit,
            self.config.get("connections.max.reauth.ms"),
        )

    def broker_client(self, broker_id: int, client_id: str, timeout_s: float) -> BrokerClient | None:
        """A connection to another live broker over the inter-broker listener (None when it
        is not registered)."""
        reg = self.registration(broker_id)
        if reg is None:
            return None
        host, port = reg.endpoint(self.inter_broker.listener_name)
        return BrokerClient(
            host, port, client_id, timeout_s, self.inter_broker, source_address(self.config.host)
        )

    async def start(self) -> None:
        for server in self.servers:  # fails fast on a port in use, before registering
            await server.start()
        self.authorizer.refresh()
        first = self.listeners[0]
        self._liveness = self.state.register_broker(
            self.broker_id,
            first.host,
            first.port,
            self.config.get("broker.session.timeout.ms"),
            [listener.to_json() for listener in self.listeners],
        )
        self._tick()
        self.replicas.delete_stray_logs()
        periodic = [
            (TICK_S, self._tick),
            (STATUS_PUBLISH_S, self._publish_status),
            (self.config.get("replica.lag.time.max.ms") / 2000, self._shrink_isrs),
            (self.config.get("log.retention.check.interval.ms") / 1000, self._enforce_retention),
            (self.config.get("log.flush.scheduler.interval.ms") / 1000, self._flush_due),
            (
                self.config.get("replica.high.watermark.checkpoint.interval.ms") / 1000,
                self.replicas.checkpoint_high_watermarks,
            ),
            (lambda: self.config.get("log.cleaner.backoff.ms") / 1000, self._clean_logs),
            (
                self.config.get("transaction.abort.timed.out.transaction.cleanup.interval.ms") / 1000,
                self.transactions.abort_timed_out,
            ),
            (
                self.config.get("offsets.retention.check.interval.ms") / 1000,
                self.groups.remove_expired_offsets,
            ),
        ]
        self._tasks = [asyncio.create_task(self._every(interval, action)) for interval, action in periodic]
        self._tasks.append(asyncio.create_task(self.groups.expire_sessions_on_time(TICK_S)))
        threading.Thread(target=self._renew_lease, name="lease", daemon=True).start()
        log.info(
            "broker %d serving on %s",
            self.broker_id,
            ", ".join(f"{ln.name}://{ln.host}:{ln.port}" for ln in self.listeners),
        )

    async def stop(self) -> None:
        """Controlled shutdown: hand leadership over first, then stop serving.

        Fetching stops at once, so the controller can take this broker out of every ISR
        without a leader adding it back while it goes."""
        self.state.mark_shutting_down(self.broker_id)
        await self.fetchers.stop()
        deadline = time.monotonic() + self.config.get("controlled.shutdown.timeout.ms") / 1000
        while self._leads_with_followers() and time.monotonic() < deadline:
            await asyncio.sleep(TICK_S)
        self._stopping.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.transactions.close()
        for server in self.servers:
            await server.stop()
        self.replicas.close()
        self._publish_status()
        self.controller.resign()
        if self._liveness is not None:
            self._liveness.release()
        log.info("broker %d stopped", self.broker_id)

    def _leads_with_followers(self) -> bool:
        """Whether leadership is left to hand over: a partition led here with another replica
        in sync, in the metadata (what the controller moves) or in the replicas hosted here.
        A leadership granted a moment ago counts before its replica is made here, so a broker
        stopped right after a topic was created waits for the controller like any other."""
        self.apply_metadata_delta()
        if not self.replicas.leads_alone():
            return True
        return any(
            partition.leader == self.broker_id and partition.isr != [self.broker_id]
            for topic in self.topics.values()
            for partition in topic.partitions.values()
        )

    def _renew_lease(self) -> None:
        """The heartbeat, on a thread of its own, as Kafka's broker heartbeats apart from its
        request handling: a broker busy opening thousands of logs is slow, not dead, and
        must not lose its leaderships for it. A paused (SIGSTOP) process stops every thread,
        this one too, so it still counts as dead after broker.session.timeout.ms."""
        while not self._stopping.wait(self.session_timeout_s / 8):
            try:
                self.state.heartbeat(self.broker_id)
            except QuorumUnreachable:
                pass  # cut off by a network fault: the tick says so (_cut_from_quorum)
            except OSError:
                log.exception("cannot renew this broker's lease")

    async def _every(self, interval_s, action) -> None:
        """Run ``action`` every ``interval_s`` seconds; a callable interval is re-read before
        each wait, so a dynamic broker config (log.cleaner.backoff.ms) applies at once."""
        while True:
            await asyncio.sleep(interval_s() if callable(interval_s) else interval_s)
            try:
                action()
            except Exception:
                log.exception("periodic task failed")

    def _tick(self) -> None:
        if self._cut_from_quorum():
            return
        self.authorizer.refresh()
        self.refresh_registrations()
        self._maintain()
        self.apply_metadata_delta()
        self.fetchers.throttle_bytes_per_s = self.state.replication_throttle(self.broker_id)

    def _cut_from_quorum(self) -> bool:
        """Whether a network fault cuts this broker off from the controller quorum. Then it
        learns nothing new and decides nothing: it serves the clients it can reach with the
        metadata it has, still leading what it led, while the controller, missing its
        heartbeats, fences it after broker.session.timeout.ms and moves its leaderships."""
        cut = not self.state.reaches_quorum()
        if cut != self._quorum_lost:
            self._quorum_lost = cut
            if cut:
                log.warning("broker %d cannot reach the controller quorum (a network fault)", self.broker_id)
            else:
                log.info("broker %d reaches the controller quorum again", self.broker_id)
        return cut

    def refresh_registrations(self) -> list[int]:
        """Re-read which brokers are live; returns their ids (for replica placement)."""
        self.registrations = self.state.brokers()
        self.live_brokers = [r for r in self.registrations if r.is_live(self.session_timeout_s)]
        return [r.broker_id for r in self.live_brokers if not r.shutting_down]

    def live_controller_id(self) -> int:
        """The controller to name to clients (Metadata, DescribeCluster). When the recorded one
        is not live (it died a moment ago), a controller round runs first, so a live broker
        claims the role: librdkafka waits on the controller it was told of, and would wait on
        a dead one until its next metadata refresh, minutes later."""
        live = {r.broker_id for r in self.live_brokers}
        if self._quorum_lost:  # the controller it knew of, as a broker cut off would
            return self._named_controller
        controller = self.state.controller()
        if controller is None or controller[0] not in live:
            self._maintain()
            controller = self.state.controller()
        self._named_controller = controller[0] if controller is not None and controller[0] in live else -1
        return self._named_controller

    def registration(self, broker_id: int) -> BrokerRegistration | None:
        return next((r for r in self.registrations if r.broker_id == broker_id), None)

    def _maintain(self) -> None:
        """A controller round over what changed since the last one."""
        changed, self._unmaintained = self._unmaintained, []
        self.controller.maintain(self.registrations, self.topics, changed, self.topic_creation.create_topic)

    def apply_metadata_delta(self) -> None:
        """Take the metadata image the records written since the last call make, and apply
        their delta to the hosted replicas, fetchers and coordinators (nothing to do, at the
        cost of one stat, when there are none)."""
        delta = self.state.take_metadata_delta()
        if delta:
            self.topics = self.state.topics()
            self._unmaintained.append(delta)
            for listener in self.metadata_listeners:
                listener(delta)
            self._apply_dynamic_configs()
            fresh = self.replicas.apply_metadata(self.topics, delta, self.config.log_defaults())
        elif self.replicas.has_pending:
            fresh = self.replicas.apply_pending()
        else:
            return
        self.fetchers.update(self.replicas.partitions, fresh)
        self.groups.on_metadata_change()
        self.transactions.on_metadata_change()
        self.share_partitions.forget_unled()
        self.share_state_epochs.forget_unled()

    def _apply_dynamic_configs(self) -> None:
        """Take up this broker's dynamic configs and the cluster-wide ones, which live beside
        the topics (Kafka's DynamicBrokerConfig.updateBrokerConfig/updateDefaultConfig)."""
        self.config.dynamic = self.state.dynamic_broker_configs(self.broker_id)
        self.config.dynamic_default = self.state.dynamic_broker_configs(None)

    def _publish_status(self) -> None:
        document = self.replicas.status_document()
        if document is not None:
            self.state.publish_replica_status(self.broker_id, document)
        shares = self.share_partitions.status_document()
        if shares is not None:
            self.state.publish_share_status(self.broker_id, shares)
        events = self.audit.take_if_changed()
        if events is not None:
            self.state.publish_security_events(self.broker_id, events)

    def _shrink_isrs(self) -> None:
        self.replicas.shrink_isrs(self.config.get("replica.lag.time.max.ms"))

    def _enforce_retention(self) -> None:
        self.replicas.enforce_retention(int(time.time() * 1000))

    def _clean_logs(self) -> None:
        self.replicas.clean_logs(int(time.time() * 1000))

    def _flush_due(self) -> None:
        self.replicas.flush_due(int(time.time() * 1000))


class BrokerMetadataView:
    """The MetadataView port (brokerd/ports/__init__.py) of the coordinators and the
    MetadataCache port (brokerd/ports/services.py) of the request handlers, over what the
    broker last read of the metadata log and the registrations."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    @property
    def topics(self) -> Mapping[str, TopicImage]:
        return self._broker.topics

    @property
    def live_brokers(self) -> Sequence[BrokerRegistration]:
        return self._broker.live_brokers

    @property
    def listeners(self) -> list[Callable[[MetadataDelta], None]]:
        return self._broker.metadata_listeners

    def apply_metadata_delta(self) -> None:
        self._broker.apply_metadata_delta()

    def refresh_registrations(self) -> list[int]:
        return self._broker.refresh_registrations()

    def live_controller_id(self) -> int:
        return self._broker.live_controller_id()

    def auto_create_topic(self, name: str) -> TopicImage | None:
        return self._broker.topic_creation.create_topic(name)

    def has_topic(self, name: str) -> bool:
        return name in self._broker.topics

    def partition_leader(self, topic: str, index: int) -> int | None:
        record = self._broker.topics.get(topic)
        partition = None if record is None else record.partitions.get(index)
        return None if partition is None else partition.leader

    def live_broker_ids(self) -> set[int]:
        return {r.broker_id for r in self._broker.live_brokers}

    def partition_count(self, topic: str) -> int | None:
        record = self._broker.topics.get(topic)
        return None if record is None else len(record.partitions)

    def topic_partitions(self) -> dict[str, tuple[uuid.UUID, int]]:
        """Every topic's id and partition count (what consumer group assignors work on)."""
        return {
            name: (uuid.UUID(hex=record.topic_id), len(record.partitions))
            for name, record in self._broker.topics.items()
        }

    def broker_address(self, broker_id: int) -> tuple[str, int] | None:
        registration = self._broker.registration(broker_id)
        return None if registration is None else (registration.host, registration.port)

    def refresh(self) -> None:
        self._broker.apply_metadata_delta()
