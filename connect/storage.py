"""Connector configs and statuses in compacted topics, in Kafka Connect's record formats
(KafkaConfigBackingStore, KafkaStatusBackingStore), so a restarted worker finds every
connector and its target state again, and tools that read Connect's topics read ours.

Config topic (one partition): `connector-<name>` -> `{"properties": {...}}`,
`target-state-<name>` -> `{"state": ..., "state.v2": ...}`, `task-<name>-<n>` ->
`{"properties": {...}}`, `commit-<name>` -> `{"tasks": n}`; a deleted connector's keys get
tombstones. Status topic: `status-connector-<name>` and `status-task-<name>-<n>` ->
`{"state", "trace", "worker_id", "generation"}`.

One worker owns a group's topics: it reads the config topic once at start, then writes it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from connect.workerconfig import WorkerConfig

log = logging.getLogger(__name__)
TIMEOUT_S = 10.0
Config = dict[str, str]


class StoreUnavailable(Exception):
    """The cluster cannot be reached, or a topic is not fit to keep Connect's state."""


class TopicNotCompacted(StoreUnavailable):
    """An existing config or status topic that would lose connectors' state: not worth waiting for."""


@dataclass
class Loaded:
    """What the config topic holds: every connector's config and target state."""

    cluster_id: str = ""
    configs: dict[str, Config] = field(default_factory=dict)
    target_states: dict[str, str] = field(default_factory=dict)

    def apply(self, key: str, value: bytes | None) -> None:
        for prefix, table in (("connector-", self.configs), ("target-state-", self.target_states)):
            if key.startswith(prefix):
                name = key.removeprefix(prefix)
                if value is None:
                    table.pop(name, None)
                elif table is self.configs:
                    self.configs[name] = json.loads(value)["properties"]
                else:
                    document = json.loads(value)
                    self.target_states[name] = document.get("state.v2") or document["state"]


class ConnectStore:
    def __init__(self, client: Mapping[str, str], worker: WorkerConfig) -> None:
        self._client: dict[str, str | int | float | bool] = dict(client)
        self._worker = worker
        self._producer: Producer | None = None

    def start(self) -> Loaded:
        """Check or create the topics, then read every connector's config."""
        admin = AdminClient(self._client)
        try:
            metadata = admin.list_topics(timeout=TIMEOUT_S)
        except KafkaException as exc:
            raise StoreUnavailable(
                f"cannot reach the cluster at {self._client['bootstrap.servers']}: {exc}"
            ) from None
        brokers = len(metadata.brokers)
        for prop, topic, partitions in (
            ("config.storage.topic", self._worker.config_topic, 1),
            ("status.storage.topic", self._worker.status_topic, self._worker.status_partitions),
        ):
            factor = self._worker.replication_factor(prop.replace("topic", "replication.factor"), brokers)
            _compacted(admin, prop, topic, partitions, factor, topic in metadata.topics)
        self._producer = Producer({**self._client, "enable.idempotence": True, "linger.ms": 0})
        return self._load(metadata.cluster_id or "")

    def _load(self, cluster_id: str) -> Loaded:
        consumer = Consumer(
            {**self._client, "group.id": "connect-config-reader", "enable.auto.commit": False}
        )
        loaded = Loaded(cluster_id)
        try:
            partition = TopicPartition(self._worker.config_topic, 0, OFFSET_BEGINNING)
            _, end = consumer.get_watermark_offsets(partition, TIMEOUT_S)
            consumer.assign([partition])
            position = 0
            while position < end:
                message = consumer.poll(TIMEOUT_S)
                if message is None:
                    raise StoreUnavailable(f"{self._worker.config_topic} was not read up to offset {end}")
                if message.error() is not None:
                    raise StoreUnavailable(f"reading {self._worker.config_topic}: {message.error()}")
                loaded.apply((message.key() or b"").decode(), message.value())
                position = (message.offset() or 0) + 1
        finally:
            consumer.close()
        return loaded

    def put_config(self, name: str, config: Mapping[str, str], task_config: Mapping[str, str]) -> None:
        self._write(
            self._worker.config_topic,
            [
                (f"connector-{name}", {"properties": dict(config)}),
                (f"task-{name}-0", {"properties": dict(task_config)}),
                (f"commit-{name}", {"tasks": 1}),
            ],
        )

    def put_target_state(self, name: str, state: str) -> None:
        # Connect's v1 field knows no STOPPED: older workers read PAUSED instead.
        v1 = "PAUSED" if state == "STOPPED" else state
        self._write(self._worker.config_topic, [(f"target-state-{name}", {"state": v1, "state.v2": state})])

    def delete(self, name: str) -> None:
        keys = (f"connector-{name}", f"target-state-{name}", f"task-{name}-0", f"commit-{name}")
        self._write(self._worker.config_topic, [(key, None) for key in keys])

    def put_status(self, key: str, status: Mapping[str, object] | None) -> None:
        self._write(self._worker.status_topic, [(key, status)])

    def _write(self, topic: str, records: list[tuple[str, Mapping[str, object] | None]]) -> None:
        """Produce the records and wait until the brokers have them all."""
        assert self._producer is not None
        failures: list[KafkaError] = []

        def delivered(err: KafkaError | None, _: object) -> None:
            if err is not None:
                failures.append(err)

        for key, value in records:
            data = None if value is None else json.dumps(value).encode()
            self._producer.produce(topic, key=key.encode(), value=data, on_delivery=delivered)
        if self._producer.flush(TIMEOUT_S) > 0 or failures:
            raise StoreUnavailable(f"cannot write to {topic}: {failures[0] if failures else 'timed out'}")

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(TIMEOUT_S)


def _compacted(admin: AdminClient, prop: str, topic: str, partitions: int, factor: int, exists: bool) -> None:
    """Create the topic compacted, or refuse an existing one that is not, in Connect's words."""
    if not exists:
        new = NewTopic(topic, partitions, factor, config={"cleanup.policy": "compact"})
        try:
            admin.create_topics([new], operation_timeout=TIMEOUT_S)[topic].result(TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise StoreUnavailable(f"cannot create the topic {topic}: {exc}") from None
        return
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    try:
        policy = admin.describe_configs([resource])[resource].result(TIMEOUT_S)["cleanup.policy"].value
    except KafkaException as exc:
        log.warning("cannot describe the cleanup policy of %s: %s", topic, exc)  # as Connect: only logged
        return
    if policy != "compact":
        raise TopicNotCompacted(
            f"Topic '{topic}' supplied via the '{prop}' property is required to have "
            f"'cleanup.policy=compact' to guarantee consistency and durability of connector "
            f"configurations and statuses, but found the topic currently has 'cleanup.policy={policy}'. "
            "Continuing would likely result in eventually losing connector configurations and "
            "statuses and problems restarting this Connect cluster in the future. Change the "
            f"'{prop}' property in the Connect worker configurations to use a topic with "
            "'cleanup.policy=compact'."
        )
