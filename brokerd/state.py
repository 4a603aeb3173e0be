"""The shared state directory: kctl's stand-in for ZooKeeper / the KRaft metadata log.

Every broker of a local cluster and the `kctl` CLI read cluster metadata from here, and this
module is the only code that opens these files. Layout of ``<cluster>/state/``:

    cluster.json          cluster id and the planned brokers (id -> port)
    metadata/             the metadata log (brokerd.metadata): topics, their configs and
                          partitions (replicas, leader, epochs, ISR, the last unclean
                          election), dynamic broker configs by broker id and "<default>"
    controller.json       the active controller's broker id and controller epoch
    fenced-controller.json  the last controller that found its epoch superseded (a zombie)
    brokers/<id>.json     a broker's registration (host, port, pid)
    brokers/<id>.lock     held (flock) by the live broker process: the OS releases it when it dies
    brokers/<id>.heartbeat  touched by the broker several times per session timeout (its lease)
    replicas/<id>.json    log start / log end / high watermark of every replica a broker hosts
    faults/<id>.json      faults kctl injects into a running broker: a replication throttle
    scram-credentials.json  SCRAM credentials per user and mechanism (salt, stored key, server
                          key, iterations: never a password), readable by the owner only
    acls.json             ACL bindings (resource pattern, principal, host, operation, permission)
    client-quotas.json    client quotas: an entity (user and/or client-id, null for <default>)
                          and its values (producer_byte_rate, consumer_byte_rate, ...)
    security-events/<id>.json  a broker's latest authentication failures and authorization denials
    .lock                 the write lock: every read-modify-write of a shared file holds it

Writes are atomic (temp file, fsync, rename, fsync directory), so readers never see half a
file, and shared files are only rewritten under the write lock.
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock, Timeout

from brokerd.atomic_file import atomic_write
from brokerd.metadata import records as metadata_records
from brokerd.metadata.editor import TopicsEditor, config_records, topic_records
from brokerd.metadata.image import MetadataDelta, MetadataImage, PartitionRecord, TopicRecord
from brokerd.metadata.log import MetadataLog, Observer

WRITE_LOCK_TIMEOUT_S = 10.0


@dataclass
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    pid: int
    started_at: float
    shutting_down: bool = False
    alive: bool = False  # the process holds its liveness lock
    heartbeat_at: float = 0.0  # last heartbeat (wall clock); stale when the process is paused
    session_timeout_ms: int = 3000  # the broker's broker.session.timeout.ms
    # every listener: {"name", "host", "port", "security_protocol"}; host and port above
    # are the first one's
    listeners: list[dict] = field(default_factory=list)

    def endpoint(self, listener_name: str) -> tuple[str, int]:
        """Where this broker serves the named listener (clients are told the addresses of
        the listener they came in on, as Kafka's advertised listeners)."""
        found = next((l for l in self.listeners if l["name"] == listener_name), None)
        return (self.host, self.port) if found is None else (found["host"], found["port"])

    def is_live(self, session_timeout_s: float | None = None, now: float | None = None) -> bool:
        """Alive and heartbeating within broker.session.timeout.ms (by default the broker's
        own, as registered): eligible for leadership."""
        now = time.time() if now is None else now
        if session_timeout_s is None:
            session_timeout_s = self.session_timeout_ms / 1000
        return self.alive and now - self.heartbeat_at < session_timeout_s


class StaleControllerEpoch(Exception):
    """A write from a controller whose epoch is lower than the current one (a zombie)."""


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        return default


def _write_json(path: Path, doc, mode: int = 0o644) -> None:
    atomic_write(path, json.dumps(doc, indent=1, sort_keys=True).encode(), mode)


def _broker_entity(broker_id: int | None) -> str:
    """How the metadata names a broker's dynamic configs: its id, or <default> (as in ZooKeeper)."""
    return "<default>" if broker_id is None else str(broker_id)


class ClusterState:
    """Reads and writes one cluster's ``state/`` directory."""

    def __init__(self, cluster_dir: Path):
        self.cluster_dir = Path(cluster_dir)
        self.dir = self.cluster_dir / "state"
        self._metadata_log: MetadataLog | None = None

    # -- layout -----------------------------------------------------------------------------
    def exists(self) -> bool:
        return (self.dir / "cluster.json").exists()

    def broker_dir(self, broker_id: int) -> Path:
        return self.cluster_dir / "brokers" / str(broker_id)

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialises read-modify-write cycles of shared files across every process."""
        try:
            with FileLock(str(self.dir / ".lock"), timeout=WRITE_LOCK_TIMEOUT_S):
                yield
        except Timeout as exc:
            raise TimeoutError(f"state directory {self.dir} is locked by another process") from exc

    # -- cluster identity -------------------------------------------------------------------
    def initialize(self, broker_ports: dict[int, int]) -> str:
        """Create the state directory for a new cluster; on an existing one, keep what is there."""
        for sub in ("brokers", "replicas"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        with self.write_lock():
            doc = _read_json(self.dir / "cluster.json")
            if doc is None:
                doc = {
                    "cluster_id": uuid.uuid4().hex[:22],
                    "brokers": {str(b): p for b, p in sorted(broker_ports.items())},
                }
                _write_json(self.dir / "cluster.json", doc)
        self._open_metadata_log()
        for broker_id in self.planned_brokers():
            self.broker_dir(broker_id).mkdir(parents=True, exist_ok=True)
        return doc["cluster_id"]

    def cluster_id(self) -> str:
        return _read_json(self.dir / "cluster.json")["cluster_id"]

    def planned_brokers(self) -> dict[int, int]:
        doc = _read_json(self.dir / "cluster.json", {"brokers": {}})
        return {int(b): int(p) for b, p in doc["brokers"].items()}

    def plan_broker(self, port: int) -> int:
        """Add a broker to the plan (the next free id, on ``port``) and return its id.

        Under the write lock, so two `kctl cluster add-broker` never pick the same id.
        """
        with self.write_lock():
            doc = _read_json(self.dir / "cluster.json")
            ids = [int(b) for b in doc["brokers"]]
            broker_id = max(ids, default=0) + 1
            doc["brokers"][str(broker_id)] = port
            _write_json(self.dir / "cluster.json", doc)
        self.broker_dir(broker_id).mkdir(parents=True, exist_ok=True)
        return broker_id

    def unplan_broker(self, broker_id: int) -> None:
        """Remove a (stopped, drained) broker from the plan, so `cluster up` no longer starts it."""
        with self.write_lock():
            doc = _read_json(self.dir / "cluster.json")
            doc["brokers"].pop(str(broker_id), None)
            _write_json(self.dir / "cluster.json", doc)

    # -- broker registrations and liveness --------------------------------------------------
    def register_broker(self, broker_id: int, host: str, port: int, session_timeout_ms: int,
                        listeners: list[dict] | None = None) -> FileLock:
        """Register this process as broker ``broker_id`` and return the liveness lock it holds.

        The lock is an OS file lock, so it is released by the kernel when the process dies,
        however it dies; a second process claiming the same id fails here.
        """
        (self.dir / "brokers").mkdir(parents=True, exist_ok=True)
        # Probes by other processes (is_alive) hold the lock for microseconds: wait those out.
        liveness = FileLock(str(self.dir / "brokers" / f"{broker_id}.lock"), timeout=2)
        try:
            liveness.acquire()
        except Timeout as exc:
            raise RuntimeError(f"broker {broker_id} is already running") from exc
        reg = {"broker_id": broker_id, "host": host, "port": port, "pid": os.getpid(),
               "started_at": time.time(), "session_timeout_ms": session_timeout_ms,
               "listeners": listeners or []}
        self.heartbeat(broker_id)  # first: a registration others can read is already live
        _write_json(self.dir / "brokers" / f"{broker_id}.json", reg)
        return liveness

    def heartbeat(self, broker_id: int) -> None:
        """Renew the broker's lease: a paused process stops renewing and is presumed dead."""
        path = self.dir / "brokers" / f"{broker_id}.heartbeat"
        try:
            os.utime(path)
        except FileNotFoundError:
            path.touch()

    def mark_shutting_down(self, broker_id: int) -> None:
        """Controlled shutdown: the controller moves leadership away from this broker."""
        path = self.dir / "brokers" / f"{broker_id}.json"
        _write_json(path, dict(_read_json(path), shutting_down=True))

    def is_alive(self, broker_id: int) -> bool:
        """True while some process holds the broker's liveness lock."""
        probe = FileLock(str(self.dir / "brokers" / f"{broker_id}.lock"), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return True
        probe.release()
        return False

    def brokers(self) -> list[BrokerRegistration]:
        regs = []
        for path in sorted((self.dir / "brokers").glob("*.json")):
            doc = _read_json(path)
            if doc is not None:
                reg = BrokerRegistration(**doc)
                reg.alive = self.is_alive(reg.broker_id)
                try:
                    reg.heartbeat_at = path.with_suffix(".heartbeat").stat().st_mtime
                except FileNotFoundError:
                    pass
                regs.append(reg)
        return sorted(regs, key=lambda r: r.broker_id)

    # -- controller -------------------------------------------------------------------------
    def controller(self) -> tuple[int, int] | None:
        doc = _read_json(self.dir / "controller.json")
        return None if doc is None else (doc["broker_id"], doc["epoch"])

    def claim_controller(self, broker_id: int, is_live: Callable[[int], bool]) -> int | None:
        """Become controller unless a live broker already is; returns the new controller epoch.

        The claim is made under the exclusive write lock and the epoch only grows, so at most
        one broker holds the current epoch. A paused controller loses its lease, and with it
        the controllership: when it wakes up its epoch is stale and its writes are refused.
        """
        def holder() -> dict:
            return _read_json(self.dir / "controller.json", {"broker_id": -1, "epoch": 0})

        def held_by_another(doc: dict) -> bool:
            return doc["broker_id"] != broker_id and is_live(doc["broker_id"])
        if held_by_another(holder()):  # the common case, answered without taking the lock
            return None
        with self.write_lock():
            doc = holder()
            if held_by_another(doc):
                return None
            epoch = doc["epoch"] + 1
            _write_json(self.dir / "controller.json", {"broker_id": broker_id, "epoch": epoch})
        return epoch

    def record_fenced_controller(self, broker_id: int, stale_epoch: int) -> None:
        """A controller that wakes up (after a pause, say) to a newer controller epoch has been
        fenced: it resigns, and this record lets `kctl watch` show the moment."""
        with self.write_lock():
            current = self.controller()
            _write_json(self.dir / "fenced-controller.json", {
                "broker_id": broker_id, "epoch": stale_epoch,
                "current_epoch": None if current is None else current[1],
                "time": round(time.time(), 3)})

    def fenced_controller(self) -> dict | None:
        return _read_json(self.dir / "fenced-controller.json")

    # -- injected faults --------------------------------------------------------------------
    def set_replication_throttle(self, broker_id: int, bytes_per_s: int | None) -> None:
        """Slow (or, with None, stop slowing) what a broker copies as a follower. Only kctl
        writes these files, one per broker, and the broker re-reads its own every tick."""
        path = self.dir / "faults" / f"{broker_id}.json"
        if bytes_per_s is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(exist_ok=True)
            _write_json(path, {"replication_bytes_per_s": bytes_per_s})

    def replication_throttle(self, broker_id: int) -> int | None:
        doc = _read_json(self.dir / "faults" / f"{broker_id}.json", {})
        return doc.get("replication_bytes_per_s")

    # -- topics -----------------------------------------------------------------------------
    def _open_metadata_log(self) -> MetadataLog:
        """The metadata log, created on first use; a cluster directory from before the log
        (one whole `metadata.json`) is upgraded into it, under the write lock."""
        if self._metadata_log is None:
            log = MetadataLog(self.dir / "metadata")
            if not log.exists():
                with self.write_lock():
                    if not log.exists():
                        self._create_metadata_log(log)
            self._metadata_log = log
        return self._metadata_log

    def _create_metadata_log(self, log: MetadataLog) -> None:
        legacy = self.dir / "metadata.json"
        doc = _read_json(legacy, {"topics": {}})
        upgraded = [r for t in doc["topics"].values() for r in topic_records(TopicRecord.from_json(t))]
        for entity, configs in doc.get("broker_configs", {}).items():
            upgraded += config_records(metadata_records.BROKER_RESOURCE, entity, {}, configs)
        tmp = log.dir.with_name(".metadata.tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        staging = MetadataLog(tmp)
        staging.append(self._stamped(upgraded, doc.get("controller_epoch")))
        tmp.rename(log.dir)  # the log appears whole, or not at all
        legacy.unlink(missing_ok=True)

    @staticmethod
    def _stamped(records: list[dict], controller_epoch: int | None) -> list[dict]:
        for record in records:
            record["controller_epoch"] = controller_epoch
            record["time"] = round(time.time(), 3)
        return records

    def metadata_image(self) -> MetadataImage:
        """The metadata as of the last record written (reads only what is new since the last
        call; the image is live: later calls update it in place)."""
        return self._open_metadata_log().catch_up()

    def topics(self) -> dict[str, TopicRecord]:
        return self.metadata_image().topics

    def follow_metadata(self, observer: Observer) -> Callable[[], None]:
        """Follow the metadata log record by record (for `kctl cluster metadata`): returns a
        function that tells ``observer`` of every record written since its last call, with
        the image as it was before the record, starting from the newest snapshot."""
        log = MetadataLog(self.dir / "metadata", observer)

        def tell_new_records() -> None:
            log.catch_up()
        return tell_new_records

    def take_metadata_delta(self) -> MetadataDelta:
        """What changed since the last call (everything, the first time)."""
        return self.metadata_image().take_delta()

    @contextmanager
    def _writing(self, controller_epoch: int | None) -> Iterator[MetadataLog]:
        """The metadata log, caught up, under the write lock; a controller's write is fenced:
        one from an epoch below the current controller's raises StaleControllerEpoch."""
        with self.write_lock():
            if controller_epoch is not None:
                current = self.controller()
                if current is not None and controller_epoch < current[1]:
                    raise StaleControllerEpoch(f"controller epoch {controller_epoch} < {current[1]}")
            log = self._open_metadata_log()
            log.catch_up()
            yield log

    @contextmanager
    def _editing(self, controller_epoch: int | None) -> Iterator[TopicsEditor]:
        with self._writing(controller_epoch) as log:
            editor = TopicsEditor(log.image)
            yield editor
            log.append(self._stamped(editor.records(), controller_epoch))

    @contextmanager
    def update_topics(self, controller_epoch: int) -> Iterator[TopicsEditor]:
        """A controller decision on the topics, under the write lock, fenced by controller epoch.

        The caller changes the yielded topics (copies of what it touches); on exit the records
        of the changes are appended to the metadata log. A writer whose controller epoch is
        below the current one raises StaleControllerEpoch and changes nothing, so a
        paused-then-resumed (zombie) controller cannot undo decisions.
        """
        with self._editing(controller_epoch) as topics:
            yield topics

    @contextmanager
    def update_topic_configs(self) -> Iterator[TopicsEditor]:
        """Topic config changes under the write lock. They are not controller decisions (as in
        Kafka's ZooKeeper mode, any broker writes them), so they are not fenced."""
        with self._editing(None) as topics:
            yield topics

    def dynamic_broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """The dynamic configs of broker ``broker_id``, or with None the cluster-wide defaults
        (Kafka's /config/brokers/<id> and /config/brokers/<default>)."""
        return dict(self.metadata_image().broker_configs.get(_broker_entity(broker_id), {}))

    @contextmanager
    def update_dynamic_broker_configs(self, broker_id: int | None) -> Iterator[dict[str, str]]:
        """Read-modify-write one broker's (or, with None, the cluster-wide) dynamic configs under
        the write lock, as ConfigRecords in the metadata log (only what changed)."""
        entity = _broker_entity(broker_id)
        with self._writing(None) as log:
            before = dict(log.image.broker_configs.get(entity, {}))
            configs = dict(before)
            yield configs
            log.append(self._stamped(config_records(metadata_records.BROKER_RESOURCE, entity,
                                                    before, configs), None))

    def change_partitions(self, controller_epoch: int,
                          changes: dict[tuple[str, int], tuple[int, PartitionRecord]]
                          ) -> list[tuple[str, int]]:
        """A controller round's leader and ISR decisions, each a compare-and-set: a partition
        is changed only while its partition epoch is still the one the decision was made at
        (else a leader's ISR change came first, and the next round decides again). Returns the
        partitions changed. O(changes), whatever the size of the cluster."""
        with self._writing(controller_epoch) as log:
            topics = log.image.topics
            new_records, done = [], []
            for (topic, index), (expected_epoch, decided) in changes.items():
                current = topics.get(topic) and topics[topic].partitions.get(index)
                if current is None or current.partition_epoch != expected_epoch:
                    continue
                new_records.append({"type": metadata_records.PARTITION_CHANGE, "topic": topic,
                                    "partition": index, **decided.changes_from(current)})
                done.append((topic, index))
            log.append(self._stamped(new_records, controller_epoch))
        return done

    def alter_isrs(self, proposals: dict[tuple[str, int], tuple[int, int, list[int]]]
                   ) -> dict[tuple[str, int], PartitionRecord | None]:
        """Leaders' ISR changes, each a compare-and-set on its partition's leader epoch and
        partition epoch (Kafka's AlterPartition), written together: one lock and one fsync
        for a round's worth of changes. Per partition the new record, or None when the
        leader's view is stale (a new leader epoch, or a controller change in between)."""
        with self._writing(None) as log:
            topics = log.image.topics
            accepted: dict[tuple[str, int], PartitionRecord | None] = {}
            new_records = []
            for (topic, index), (leader_epoch, partition_epoch, isr) in proposals.items():
                record = topics.get(topic) and topics[topic].partitions.get(index)
                if (record is None or record.leader_epoch != leader_epoch
                        or record.partition_epoch != partition_epoch):
                    accepted[(topic, index)] = None
                    continue
                accepted[(topic, index)] = record
                new_records.append({"type": metadata_records.PARTITION_CHANGE, "topic": topic,
                                    "partition": index, "isr": sorted(isr),
                                    "partition_epoch": partition_epoch + 1})
            log.append(self._stamped(new_records, None))
            return {key: None if record is None else record.clone()
                    for key, record in accepted.items()}

    def alter_isr(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int,
                  isr: list[int]) -> PartitionRecord | None:
        """One leader's ISR change (see alter_isrs)."""
        return self.alter_isrs({(topic, partition): (leader_epoch, partition_epoch, isr)})[
            (topic, partition)]

    def request_topic_creation(self, name: str) -> None:
        """A non-controller broker asks the controller to auto-create a topic."""
        with self.write_lock():
            pending = set(_read_json(self.dir / "topic_requests.json", []))
            if name not in pending:
                _write_json(self.dir / "topic_requests.json", sorted(pending | {name}))

    def take_topic_requests(self) -> list[str]:
        path = self.dir / "topic_requests.json"
        if not path.exists():
            return []
        with self.write_lock():
            pending = _read_json(path, [])
            path.unlink(missing_ok=True)
        return pending

    def allocate_producer_ids(self, count: int) -> int:
        """Reserve ``count`` producer ids, unique across brokers and restarts; returns the first."""
        with self.write_lock():
            doc = _read_json(self.dir / "producer_ids.json", {"next": 0})
            first = doc["next"]
            _write_json(self.dir / "producer_ids.json", {"next": first + count})
        return first

    # -- security: SCRAM credentials, ACL bindings, security events -----------------------------
    def scram_credentials(self) -> dict[str, dict[str, dict]]:
        """user -> mechanism -> {"salt", "stored_key", "server_key" (base64), "iterations"}."""
        return _read_json(self.dir / "scram-credentials.json", {})

    def scram_credentials_version(self) -> tuple[int, int] | None:
        """The change detector for SCRAM credentials: one stat."""
        return self._file_version("scram-credentials.json")

    def acl_bindings_version(self) -> tuple[int, int] | None:
        """The change detector for ACL bindings: one stat."""
        return self._file_version("acls.json")

    def _file_version(self, name: str) -> tuple[int, int] | None:
        """(inode, mtime) of a state file, None when absent: a rename gives a new inode."""
        try:
            st = os.stat(self.dir / name)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_mtime_ns

    @contextmanager
    def update_scram_credentials(self) -> Iterator[dict[str, dict[str, dict]]]:
        """Read-modify-write the SCRAM credentials under the write lock (AlterUserScramCredentials,
        any broker); the file stays readable by its owner only."""
        with self.write_lock():
            credentials = self.scram_credentials()
            yield credentials
            _write_json(self.dir / "scram-credentials.json", credentials, 0o600)

    def bootstrap_scram_credential(self, user: str, mechanism: str, salt: bytes,
                                   stored_key: bytes, server_key: bytes, iterations: int) -> None:
        """A credential written before any broker runs (Kafka's `kafka-storage format
        --add-scram`): how the first super user can log in to a cluster with no users yet."""
        with self.update_scram_credentials() as credentials:
            credentials.setdefault(user, {})[mechanism] = {
                "salt": base64.b64encode(salt).decode(),
                "stored_key": base64.b64encode(stored_key).decode(),
                "server_key": base64.b64encode(server_key).decode(),
                "iterations": iterations}

    def acl_bindings(self) -> list[dict]:
        return _read_json(self.dir / "acls.json", [])

    @contextmanager
    def update_acl_bindings(self) -> Iterator[list[dict]]:
        """Read-modify-write the ACL bindings under the write lock (CreateAcls, DeleteAcls)."""
        with self.write_lock():
            bindings = self.acl_bindings()
            yield bindings
            _write_json(self.dir / "acls.json", bindings)

    def client_quotas(self) -> list[dict]:
        """[{"entity": {"user"|"client-id"|"ip": name or None for <default>},
        "values": {key: float}}], one entry per entity that has a value."""
        return _read_json(self.dir / "client-quotas.json", [])

    def client_quotas_version(self) -> tuple[int, int] | None:
        """The change detector for client quotas: one stat."""
        return self._file_version("client-quotas.json")

    @contextmanager
    def update_client_quotas(self) -> Iterator[list[dict]]:
        """Read-modify-write the client quotas under the write lock (AlterClientQuotas)."""
        with self.write_lock():
            entries = self.client_quotas()
            yield entries
            _write_json(self.dir / "client-quotas.json", entries)

    def publish_security_events(self, broker_id: int, events: list[dict]) -> None:
        """A broker's latest security events, its own file (no lock: only it writes it)."""
        (self.dir / "security-events").mkdir(exist_ok=True)
        _write_json(self.dir / "security-events" / f"{broker_id}.json", events)

    def security_events(self) -> list[dict]:
        """Every broker's latest authentication failures and authorization denials, oldest first."""
        events = []
        for path in (self.dir / "security-events").glob("*.json"):
            events += _read_json(path, [])
        return sorted(events, key=lambda e: e["time"])

    # -- published replica status -------------------------------------------------------------
    def publish_replica_status(self, broker_id: int, document: bytes) -> None:
        """A broker's own file, so it needs no lock: only that broker ever writes it. The
        document maps "topic:partition" to that replica's status."""
        atomic_write(self.dir / "replicas" / f"{broker_id}.json", document)

    def replica_status(self) -> dict[int, dict[tuple[str, int], dict]]:
        out = {}
        for path in (self.dir / "replicas").glob("*.json"):
            doc = _read_json(path, {})
            entries = {}
            for key, status in doc.items():
                topic, _, part = key.rpartition(":")
                entries[(topic, int(part))] = status
            out[int(path.stem)] = entries
        return out
