"""The proxy's Kafka clients, one set per user: on a secured cluster each user's requests reach
the brokers under the user's own principal (their ACLs apply), as Confluent's proxy does with
principal propagation. On an open cluster there is one set, the proxy's own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

Credentials = tuple[str, str]  # user name and password, from HTTP basic auth
MAX_USERS = 256  # clients are kept per user; a bound keeps a flood of users from exhausting the proxy
DELIVERY_TIMEOUT_MS = 30_000  # a record not acknowledged by then is reported failed, never waited on longer
PRODUCER_CONFIG: dict[str, Any] = {
    "enable.idempotence": True,
    "linger.ms": 5,
    "message.timeout.ms": DELIVERY_TIMEOUT_MS,
    # keyed records land in the partition Java's producer (Confluent's proxy) would choose
    "partitioner": "murmur2_random",
    # the routes refuse unknown topics (40401); a producer must not create them behind their back
    "allow.auto.create.topics": False,
}
POLL_INTERVAL_S = 0.1
log = logging.getLogger("restproxy")


class ClusterUnreachable(Exception):
    pass


class PolledProducer:
    """A user's producer, whose delivery reports a thread of its own serves, so that requests
    sharing the producer each wait only for their own records' reports (a request that flushed
    the shared producer would wait for everyone's records too): pass `on_delivery` to
    `producer.produce` and never poll or flush it.

    An idempotent producer that cannot get a producer id (a user without WRITE on any topic:
    Cluster authorization failed) fails for good; `fatal` keeps why, for the records it then
    purges, and Clients replaces it at the user's next request (whose ACLs may have changed)."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.fatal: KafkaError | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="restproxy-deliveries", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stopping.is_set():
            try:
                self.producer.poll(POLL_INTERVAL_S)
            except KafkaException as exc:  # confluent-kafka raises a fatal error from poll
                error = exc.args[0] if exc.args else None
                if isinstance(error, KafkaError) and error.fatal():
                    self.fatal = error
                else:
                    log.exception("serving a producer's delivery reports")
            except Exception:  # a callback's exception surfaces here: the other reports still need serving
                log.exception("serving a producer's delivery reports")

    def stop(self, flush_timeout_s: float) -> None:
        """Deliver what is in flight (its requests get their answers), then stop polling."""
        self.producer.flush(flush_timeout_s)
        self._stopping.set()
        self._thread.join()


class Clients:
    def __init__(self, bootstrap: str, config: Mapping[str, str]) -> None:
        self.bootstrap = bootstrap
        self._base: dict[str, Any] = {"bootstrap.servers": bootstrap, **config}
        self._producers: dict[Credentials | None, PolledProducer] = {}
        self._admins: dict[Credentials | None, AdminClient] = {}
        self._lock = threading.Lock()

    def wait_for_cluster(self, timeout_s: float) -> None:
        """Wait until the cluster answers (it may be starting beside the proxy)."""
        try:
            self.admin(None).list_topics(timeout=timeout_s)
        except KafkaException as exc:
            raise ClusterUnreachable(f"cannot reach the cluster at {self.bootstrap}: {exc}") from None

    def config(self, credentials: Credentials | None) -> dict[str, Any]:
        """librdkafka settings for a client acting as this user (the proxy's own without one)."""
        if credentials is None:
            return dict(self._base)
        user, password = credentials
        return {**self._base, "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": password}

    def producer(self, credentials: Credentials | None) -> PolledProducer:
        """The user's producer (a new one in place of one that failed for good)."""
        with self._lock:
            failed = self._producers.get(credentials)
            if failed is not None and failed.fatal is not None:
                del self._producers[credentials]
                failed.stop(0)  # its records are purged already
            if credentials not in self._producers:
                self._bounded(self._producers)
                producer = Producer({**self.config(credentials), **PRODUCER_CONFIG})
                self._producers[credentials] = PolledProducer(producer)
            return self._producers[credentials]

    def admin(self, credentials: Credentials | None) -> AdminClient:
        with self._lock:
            if credentials not in self._admins:
                self._bounded(self._admins)
                self._admins[credentials] = AdminClient(self.config(credentials))
            return self._admins[credentials]

    @staticmethod
    def _bounded(table: dict[Any, Any]) -> None:
        if len(table) >= MAX_USERS:
            oldest = next(iter(table))
            client = table.pop(oldest)
            if isinstance(client, PolledProducer):
                client.stop(5)

    def close(self) -> None:
        with self._lock:
            for poller in self._producers.values():
                poller.stop(5)
            self._producers.clear()
            self._admins.clear()
