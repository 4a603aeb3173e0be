"""librdkafka clients configured the kctl way, and the calls every command shares.

Every client gets the resolved bootstrap, quiet librdkafka logging (kctl reports errors
itself, in one line), timeouts bounded by `--timeout`, then the settings of a properties file
(kctl.kafka.clientprops: a secured local cluster's admin.properties, or --command-config),
then the user's `-X` settings last so they can override anything. A connection keeps one
admin client for all of a command's admin requests.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ClusterMetadata, TopicMetadata

from kctl.kafka import clientprops
from kctl.kafka.bootstrap import Bootstrap, local_servers, resolve_bootstrap, resolve_cluster_dir
from kctl.kafka.errors import NOT_AUTHORIZED, from_kafka
from kctl.shell.connectionoptions import ConnectionOptions
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.keyvalue import parse_pairs

Client = AdminClient | Producer | Consumer
REFUSALS = NOT_AUTHORIZED | {KafkaError._SSL}  # the cluster answered, but not to these settings

_SILENT = logging.getLogger("kctl.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


@dataclass(frozen=True)
class Connection:
    bootstrap: Bootstrap
    timeout: float
    settings: dict[str, str] = field(default_factory=dict)  # -X
    properties: dict[str, str] = field(default_factory=dict)  # a properties file's
    # librdkafka's latest error events: an authentication or TLS failure is only told there,
    # while the request that failed because of it just reports a transport failure
    errors: deque[KafkaError] = field(default_factory=lambda: deque(maxlen=16), compare=False, repr=False)

    def client_settings(self) -> dict[str, str]:
        """The properties file's settings overridden by -X: what the user chose, the
        security settings included, for clients kctl does not configure itself (Spark)."""
        return {**self.properties, **self.settings}

    def config(self, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap.servers,
            "client.id": "kctl",
            "socket.connection.setup.timeout.ms": max(1000, int(self.timeout * 1000)),
            # librdkafka drops its bootstrap connection once the first metadata names the
            # brokers, and waits half of this (50 ms by default) before it connects to one
            # of them, which a short command would pay on every run. Backoff still grows to
            # reconnect.backoff.max.ms against a broker that is down.
            "reconnect.backoff.ms": 10,
        }
        if "debug" in self.settings:
            conf["log_level"] = 7
        else:  # level 0 still logs fatal errors (a fenced producer), which kctl reports itself
            conf.update({"log_level": 0, "logger": _SILENT})
        conf.update(defaults or {})
        conf.update(self.client_settings())
        conf["error_cb"] = self._recording(conf.get("error_cb"))
        return conf

    def _recording(self, then: Callable[[KafkaError], None] | None) -> Callable[[KafkaError], None]:
        def record(error: KafkaError) -> None:
            self.errors.append(error)
            if then is not None:
                then(error)

        return record

    def admin(self) -> AdminClient:
        """The connection's admin client, made on first use and kept: a command's admin
        requests share it, and it outlives their answers (a client dropped while requests
        are pending cancels them)."""
        return self._admin

    @cached_property
    def _admin(self) -> AdminClient:
        # An admin client is a producer inside librdkafka: without this, describing a topic
        # that does not exist would create it on brokers with auto.create.topics.enable.
        return _create(AdminClient, self.config({"allow.auto.create.topics": False}))

    def producer(self, defaults: dict[str, Any]) -> Producer:
        # A bounded delivery timeout: a record fails after 30 s instead of librdkafka's 5 min,
        # long enough to ride out a leader election in a local failover demo.
        return _create(Producer, self.config({"message.timeout.ms": 30000, **defaults}))

    def consumer(self, defaults: dict[str, Any]) -> Consumer:
        # confluent-kafka insists on a group.id even for assign(); kctl never commits with it.
        base = {"group.id": "kctl", "enable.auto.commit": False, "enable.auto.offset.store": False}
        return _create(Consumer, self.config({**base, **defaults}))


def connect(options: ConnectionOptions) -> Connection:
    """Resolve a command's connection options into a Connection."""
    resolved = resolve_bootstrap(options.bootstrap, resolve_cluster_dir(options.cluster_dir))
    return Connection(
        resolved,
        options.timeout,
        dict(parse_pairs(list(options.settings), "-X setting")),
        clientprops.for_bootstrap(resolved, options.command_config),
    )


def local_connection(cluster_dir: Path, timeout: float) -> Connection:
    """The local cluster's live brokers, whatever $KCTL_BOOTSTRAP says, as its super user
    when it is secured: for commands that act on the local cluster itself."""
    bootstrap = Bootstrap(local_servers(cluster_dir), "local", cluster_dir)
    return Connection(bootstrap, timeout, properties=clientprops.for_bootstrap(bootstrap, None))


def _create(kind: type, conf: dict[str, Any]) -> Any:
    try:
        return kind(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        reason = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
        raise KctlError(f"invalid client setting: {reason}", ExitCode.INVALID_INPUT) from None


def fetch_metadata(client: Client, conn: Connection, topic: str | None = None) -> ClusterMetadata:
    """Cluster metadata; a KctlError with exit 3 when the cluster does not answer in time,
    exit 7 when it refuses the client's credentials."""
    try:
        return client.list_topics(topic, timeout=conn.timeout)
    except KafkaException as exc:
        error = exc.args[0]
        client.poll(0)  # serves the error events that say why; kctl gives up either way
        refusal = next((e for e in reversed(conn.errors) if e.code() in REFUSALS), None)
        if error.code() in REFUSALS or refusal is not None:
            raise from_kafka(
                refusal or error, f"connect to the cluster at {conn.bootstrap.servers}"
            ) from None
        raise KctlError(
            f"cannot reach the cluster at {conn.bootstrap.servers} within {conn.timeout:g}s ({error.str()})",
            ExitCode.UNREACHABLE,
        ) from None


def checked(conn: Connection) -> Connection:
    """`conn`, once the cluster has answered a metadata request: an unreachable cluster is
    exit 3 and refused credentials exit 7 before a command's own request could time out."""
    fetch_metadata(conn.admin(), conn)
    return conn


def produce_waiting(producer: Producer, *args: Any, **kwargs: Any) -> None:
    """producer.produce(), waiting for room while librdkafka's send queue is full."""
    while True:
        try:
            return producer.produce(*args, **kwargs)
        except BufferError:
            producer.poll(0.1)


def find_topic(metadata: ClusterMetadata, topic: str) -> TopicMetadata:
    """One topic of fetched metadata; an unknown topic is a KctlError with exit code 4."""
    meta = metadata.topics.get(topic)
    error = None if meta is None else meta.error
    if meta is None or (
        error is not None and error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)
    ):
        raise KctlError(f"unknown topic {topic!r}", ExitCode.NOT_FOUND)
    if error is not None:
        raise from_kafka(error, f"get metadata for topic {topic!r}")
    return meta


# How long to wait before asking again for a topic whose leader is not elected yet.
LEADER_ELECTION_BACKOFF_S = 0.1


def topic_metadata(client: Client, conn: Connection, topic: str) -> TopicMetadata:
    """One topic's metadata, with leaders. A topic that this very request auto-created has
    none yet (Kafka answers LEADER_NOT_AVAILABLE until the controller elects them): it is
    asked for again until the timeout, as librdkafka does before it sends records."""
    deadline = time.monotonic() + conn.timeout
    while True:
        metadata = fetch_metadata(client, conn, topic)
        meta = metadata.topics.get(topic)
        electing = (
            meta is not None
            and meta.error is not None
            and meta.error.code() == KafkaError.LEADER_NOT_AVAILABLE
        )
        if not electing or time.monotonic() >= deadline:
            return find_topic(metadata, topic)
        time.sleep(LEADER_ELECTION_BACKOFF_S)


def result(future: Future, doing: str) -> Any:
    """The result of an AdminClient future, or a KctlError naming what failed."""
    try:
        return future.result()
    except KafkaException as exc:
        raise from_kafka(exc, doing) from None
