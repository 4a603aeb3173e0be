"""A lesson's own cluster: brokerd daemons in a temporary directory, the clients that run its
experiments, and what `kctl watch` would show of it.

The cluster is started on free ports with the lesson's broker settings and is always stopped
(paused brokers resumed first, stragglers killed) when the lesson ends, however it ends: a
learner's own cluster in ~/.kctl is never touched. Faults go through kctl.cluster.brokerctl,
clients through kctl.kafka.client, and the watch view is kctl.watch's own: snapshots of the
state directory, their sections, and the changes kctl.watch.events narrates, collected by a
background thread so a lesson can show what happened while an experiment ran. A lesson about
schemas starts the cluster's schema registry too, as `kctl cluster up` does; it is stopped first.
"""

from __future__ import annotations

import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from brokerd.security import client_properties
from brokerd.state.cluster_plan import planned_host
from brokerd.state.cluster_setup import open_setup
from brokerd.state.cluster_view import ClusterView, open_view
from kctl.cluster import (
    brokerconfig,
    brokerctl,
    localcluster,
    localservice,
    netfaults,
    securecluster,
    snapshot,
)
from kctl.kafka import groups, topics
from kctl.kafka.client import Connection, local_connection
from kctl.shell.console import Section
from kctl.shell.errors import KctlError
from kctl.watch import dashboard, events

T = TypeVar("T")
_PARTITION_CHANGE = re.compile(r"([a-zA-Z0-9._-]+)/\d+: ")

START_TIMEOUT_S = 45.0  # several brokers starting on a busy laptop
CLIENT_TIMEOUT_S = 15.0
NARRATE_EVERY_S = 0.2  # leaders publish every 0.5 s: often enough to see each moment
PUBLISH_PERIOD_S = 0.5  # how often a leader publishes its partitions' view (brokerd)
MAX_EVENTS = 200  # narrated changes kept for one lesson
MAX_RECORDS = 10_000  # what a lesson ever reads back from one topic
CONNECT_MASTER = "local[2]"  # a lesson's connectors on the laptop's own Spark

# Every lesson's cluster: its internal topics small, groups formed at once, and leaders left
# where failover put them (a lesson moves them itself when it wants to).
LAB_DEFAULTS = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.leader.rebalance.enable": "false",
}


class LessonFailure(KctlError):
    """The cluster did not do what the experiment waited for within its time."""


class Lab:
    """A running lesson cluster; use as a context manager so it is always stopped."""

    def __init__(
        self, brokers: int, broker_config: dict[str, str], security_protocol: str = "PLAINTEXT"
    ) -> None:
        self.brokers = brokers
        self.broker_config = {**LAB_DEFAULTS, **broker_config}
        self.security_protocol = security_protocol  # anything but PLAINTEXT: SASL/TLS and ACLs on
        self.seen: dict[str, Any] = {}  # what experiments observed, for the checks
        self._tmp: Path | None = None
        self._launched: list[localcluster.LaunchedBrokers] = []
        self._events: list[tuple[float, str]] = []
        self._shown = 0
        self._stop_narrating = threading.Event()
        self._narrator: threading.Thread | None = None
        self._conn: Connection | None = None
        self._closers: list[Callable[[], None]] = []
        self._services: dict[localservice.Service, localservice.StartingService] = {}
        self._urls: dict[localservice.Service, str] = {}
        self._neighbour: Lab | None = None

    # -- the cluster ---------------------------------------------------------------------

    def __enter__(self) -> Lab:
        self._tmp = Path(tempfile.mkdtemp(prefix="kctl-learn-"))
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def dir(self) -> Path:
        assert self._tmp is not None, "the lab is used inside its `with`"
        return self._tmp / "cluster"

    @property
    def state(self) -> ClusterView:
        return open_view(self.dir)

    def start(self) -> None:
        state = open_setup(self.dir)
        ports = localcluster.plan(state, self.brokers, None)
        state.initialize(ports)
        # as `kctl cluster up --security-protocol` does: the super user admin, admin.properties
        self.broker_config.update(securecluster.secure(state, self.security_protocol))
        brokerconfig.remember(self.dir, self.broker_config, self.security_protocol)
        settings = brokerconfig.effective(self.broker_config, self.brokers)
        localcluster.wait_ready(state, self._launch(ports, settings), START_TIMEOUT_S)
        self._narrator = threading.Thread(target=self._narrate, name="kctl-learn-watch", daemon=True)
        self._narrator.start()

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run `closer` (a lesson's clients) before the brokers stop."""
        self._closers.append(closer)

    def close(self) -> None:
        """Close the lesson's clients, stop every broker (paused ones too), reap the
        processes, remove the directory."""
        for closer in reversed(self._closers):
            try:
                closer()
            except Exception:  # a client of a cluster that is going away: nothing to save
                pass
        self._stop_narrating.set()
        if self._narrator is not None:
            self._narrator.join(5)
        try:
            self._stop_services()
            if self._neighbour is not None:
                self._neighbour.close()
            if self._tmp is not None and self.state.exists():
                netfaults.heal_all(self.state)  # no rule outlives the lesson's cluster
                localcluster.stop_all(self.state)
        finally:
            for launched in self._launched:
                launched.stop()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def schema_registry(self) -> str:
        """The URL of the cluster's schema registry, started as `kctl cluster up` starts it the
        first time a lesson asks: only the lessons about schemas pay for its start."""
        return self._service(localservice.SCHEMA_REGISTRY)

    def connect_worker(self) -> str:
        """The URL of a connect worker beside the cluster, started as `kctl connect up` starts
        it the first time a lesson asks; its Spark starts with its first connector."""
        home = localservice.directory(self.dir, localservice.CONNECT)
        return self._service(localservice.CONNECT, "--dir", str(home), "--master", CONNECT_MASTER)

    def neighbour(self) -> Lab:
        """A second cluster of one broker beside this one (another data centre, for a lesson
        about mirroring), started the first time a lesson asks and stopped with this one."""
        if self._neighbour is None:
            neighbour = Lab(1, {"offsets.topic.replication.factor": "1"})
            self._neighbour = neighbour.__enter__()
        return self._neighbour

    def _service(self, service: localservice.Service, *extra: str) -> str:
        """Start `service` beside the brokers once; `close` stops it before the brokers it
        keeps its state in."""
        if service not in self._urls:
            secured = self.security_protocol != "PLAINTEXT"
            properties = client_properties.path(self.dir) if secured else None
            with _signals_deferred():  # Ctrl-C must not come between its start and our note of it
                starting = localservice.start(
                    self.dir, service, self.bootstrap, properties, extra_args=tuple(extra)
                )
                self._services[service] = starting
            self._urls[service] = starting.serving(self.bootstrap).url
        return self._urls[service]

    def _stop_services(self) -> None:
        """SIGTERM each service (SIGKILL if it lingers) and reap it. One not holding its lock
        yet (Ctrl-C while it started) is not found by the lock: the process is killed."""
        for service, starting in self._services.items():
            if starting.process is None:
                continue
            if localservice.stop(self.dir, service) not in ("stopped", "killed"):
                starting.process.kill()
            starting.process.wait()

    @property
    def conn(self) -> Connection:
        """A connection to the lab's live brokers (made once: brokers may die later)."""
        if self._conn is None:
            self._conn = local_connection(self.dir, CLIENT_TIMEOUT_S)
        return self._conn

    def as_user(self, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Connection:
        """A connection that authenticates as `user` (SASL) instead of the super user."""
        properties = {
            "security.protocol": self.security_protocol,
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }
        return Connection(self.conn.bootstrap, CLIENT_TIMEOUT_S, properties=properties)

    @property
    def bootstrap(self) -> str:
        planned = self.state.planned_brokers().items()
        return ",".join(f"{planned_host(broker_id)}:{port}" for broker_id, port in planned)

    # -- faults, through `kctl broker`'s own code -----------------------------------------

    def pause(self, broker_id: int) -> None:
        brokerctl.pause(self.state, broker_id)

    def resume(self, broker_id: int) -> None:
        brokerctl.resume(self.state, broker_id)

    def kill(self, broker_id: int) -> None:
        brokerctl.kill(self.state, broker_id)

    def isolate(self, broker_id: int, peers: list[int]) -> None:
        """Cut a broker off from ``peers`` and the controller quorum, as `kctl broker isolate
        ID --from PEERS,controller` does; clients still reach it."""
        netfaults.isolate(self.state, broker_id, peers, from_quorum=True)

    def heal(self) -> None:
        """Remove every network fault, as `kctl broker heal` does."""
        netfaults.heal_all(self.state)

    def restart(self, broker_id: int) -> None:
        """Start a dead broker again with its data, as `kctl broker start` does."""
        state = self.state
        settings = brokerconfig.effective(self.broker_config, self.brokers)
        port = state.planned_brokers()[broker_id]
        localcluster.wait_ready(state, self._launch({broker_id: port}, settings), START_TIMEOUT_S)

    def _launch(self, ports: dict[int, int], settings: dict[str, str]) -> localcluster.LaunchedBrokers:
        """Start brokers and remember them before Ctrl-C (or SIGTERM) can be acted on, so
        `close` always knows every process it has to stop."""
        with _signals_deferred():
            launched = localcluster.launch(self.state, ports, settings)
            self._launched.append(launched)
        return launched

    # -- topics and partitions -----------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replicas: int, **configs: str) -> None:
        """Create the topic and wait until every partition has a leader that published its view."""
        topics.create(
            self.conn, name, partitions, replicas, {k.replace("_", "."): v for k, v in configs.items()}
        )
        self.wait(
            lambda: (
                all(p["high_watermark"] is not None for p in self.partitions(name))
                and len(self.partitions(name)) == partitions
            ),
            f"topic {name} to have its leaders",
        )

    def partitions(self, topic: str) -> list[dict]:
        """The topic's partitions as `kctl watch` shows them (leader, ISR, watermarks...)."""
        return snapshot.partitions(self.state, topic)

    def partition(self, topic: str, index: int = 0) -> dict:
        return self.partitions(topic)[index]

    def followers(self, topic: str, index: int = 0) -> list[int]:
        p = self.partition(topic, index)
        return [b for b in p["replicas"] if b != p["leader"]]

    def controller(self) -> tuple[int, int] | None:
        return self.state.controller()

    def changes(self, fragment: str) -> list[tuple[float, str]]:
        """The narrated changes (wall-clock time, line) that contain `fragment`."""
        return [(t, line) for t, line in list(self._events) if fragment in line]

    # -- clients -------------------------------------------------------------------------

    def producer(self, **config: Any) -> Producer:
        return self.conn.producer(_settings(config))

    def consumer(self, **config: Any) -> Consumer:
        return self.conn.consumer(_settings(config))

    def produce(
        self,
        topic: str,
        values: list[str],
        keys: list[str | None] | None = None,
        partition: int | None = None,
        timeout: float = 30.0,
        producer: Producer | None = None,
        **config: Any,
    ) -> list[tuple[KafkaError | None, Message]]:
        """Send `values` with `producer` (else a new one with `config`) and wait for every
        delivery report; they are returned in the order they came."""
        producer = producer or self.producer(**config)
        reports: list[tuple[KafkaError | None, Message]] = []
        for i, value in enumerate(values):
            extra: dict[str, Any] = {} if partition is None else {"partition": partition}
            key = None if keys is None else keys[i]
            producer.produce(
                topic, value.encode(), key, on_delivery=lambda e, m: reports.append((e, m)), **extra
            )
        remaining = producer.flush(timeout)
        if remaining:
            raise LessonFailure(f"{remaining} record(s) still unacknowledged after {timeout:g}s")
        return reports

    def read(
        self, topic: str, partitions: list[int] | None = None, start: int = 0, **config: Any
    ) -> list[Message]:
        """Every record of the partitions from `start` (or the log start, if later) up to what a
        consumer may read now (the high watermark, or with read_committed the last stable
        offset), in partition order."""
        consumer = self.consumer(**config)
        try:
            wanted = (
                partitions if partitions is not None else [p["partition"] for p in self.partitions(topic)]
            )
            starts, ends = {}, {}
            for p in wanted:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=CLIENT_TIMEOUT_S)
                starts[p], ends[p] = max(start, low), high
            pending = {p for p in wanted if ends[p] > starts[p]}
            consumer.assign([TopicPartition(topic, p, starts[p]) for p in pending])
            records: list[Message] = []
            deadline = time.monotonic() + CLIENT_TIMEOUT_S
            while pending and time.monotonic() < deadline and len(records) < MAX_RECORDS:
                for message in consumer.consume(500, 0.2):
                    if message.error() is not None:
                        continue
                    records.append(message)
                    if (message.offset() or 0) + 1 >= ends[message.partition() or 0]:
                        pending.discard(message.partition() or 0)
                if read_committed_done(consumer, pending, ends, topic):
                    break
            return sorted(records, key=lambda m: (m.partition() or 0, m.offset() or 0))
        finally:
            consumer.close()

    def read_as_group(self, topic: str, group: str, count: int, **config: Any) -> list[Message]:
        """`count` records read by a new member of `group` (subscribed: the group decides where
        it starts); its consumer leaves the group afterwards, committing nothing itself."""
        consumer = self.consumer(group_id=group, auto_offset_reset="earliest", **config)
        records: list[Message] = []
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + 2 * CLIENT_TIMEOUT_S
            while len(records) < count and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    records.append(message)
            return records
        finally:
            consumer.close()

    def watermarks(self, topic: str, partition: int = 0, **config: Any) -> tuple[int, int]:
        """(log start, end) as a consumer is told them (ListOffsets): the end is the high
        watermark, or with isolation.level=read_committed the last stable offset."""
        consumer = self.consumer(**config)
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=CLIENT_TIMEOUT_S)
        finally:
            consumer.close()

    def describe_group(self, group_id: str) -> dict:
        return groups.describe(self.conn, group_id)

    # -- waiting ---------------------------------------------------------------------------

    def wait(
        self, predicate: Callable[[], T | None], what: str, timeout: float = 20.0, poll: float = 0.05
    ) -> T:
        """Poll `predicate` every `poll` seconds until it returns something truthy (None or
        False: not yet); a LessonFailure after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise LessonFailure(f"waited {timeout:g}s for {what}, in vain")
            time.sleep(poll)

    # -- the watch view --------------------------------------------------------------------

    def _narrate(self) -> None:
        """kctl watch's loop without a screen: every change between snapshots, with its time."""
        before = None
        while not self._stop_narrating.is_set():
            try:
                snap = snapshot.take(self.state)
            except (KctlError, OSError, ValueError):
                snap = None  # a file replaced under us: the next look will do
            if snap is not None:
                if before is not None:
                    self._events += [(snap["time"], line) for line in events.changes(before, snap)]
                    del self._events[:-MAX_EVENTS]
                before = snap
            self._stop_narrating.wait(NARRATE_EVERY_S)

    def settle(self) -> None:
        """Let every leader publish the present once more, and the narrator see it, so the
        view shown is not a moment from before the experiment's last step."""
        time.sleep(PUBLISH_PERIOD_S + 2 * NARRATE_EVERY_S)

    def watch_slice(
        self, topic: str | None, group: str | None = None, brokers: bool = True
    ) -> tuple[list[Section], list[str]]:
        """The sections `kctl watch TOPIC` shows now (brokers, the topic, the group), and the
        changes it narrated since the last slice shown."""
        self.settle()
        snap = snapshot.take(self.state, topic)
        snap["groups"] = [self.describe_group(group)] if group is not None else []
        sections = dashboard.build(snap, [])
        if not brokers:
            sections = sections[1:]
        fresh = [line for _, line in self._events[self._shown :] if _about(line, topic)]
        self._shown = len(self._events)
        return sections, fresh


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back while processes are started and remembered, so `close`
    always knows every process it has to stop; they are acted on right after."""
    deferred = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, deferred)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, deferred)


def _about(line: str, topic: str | None) -> bool:
    """Whether a narrated change belongs in the slice of `topic`: every change but those of
    another topic's partitions ("orders/0: ...")."""
    found = _PARTITION_CHANGE.match(line)
    return topic is None or found is None or found[1] == topic


def read_committed_done(consumer: Consumer, pending: set[int], ends: dict[int, int], topic: str) -> bool:
    """A read_committed consumer stops at the last stable offset, and aborted records or
    transaction markers below the high watermark are never handed out: a partition whose
    position reached its end is done even without a record at end - 1."""
    if not pending:
        return True
    positions = consumer.position([TopicPartition(topic, p) for p in pending])
    for tp in positions:
        if tp.offset >= ends[tp.partition]:
            pending.discard(tp.partition)
    return not pending


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    """Client settings given as Python keywords (acks="all", enable_idempotence=True) under
    their librdkafka names; callbacks (stats_cb, error_cb) keep theirs."""
    return {k if k.endswith("_cb") else k.replace("_", "."): v for k, v in config.items()}
