"""The proxy's Kafka clients, one set per user: on a secured cluster each user's requests reach
the brokers under the user's own principal (their ACLs apply), as Confluent's proxy does with
principal propagation. On an open cluster there is one set, the proxy's own."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

Credentials = tuple[str, str]  # user name and password, from HTTP basic auth
MAX_USERS = 256  # clients are kept per user; a bound keeps a flood of users from exhausting the proxy


class ClusterUnreachable(Exception):
    pass


class Clients:
    def __init__(self, bootstrap: str, config: Mapping[str, str]) -> None:
        self.bootstrap = bootstrap
        self._base: dict[str, Any] = {"bootstrap.servers": bootstrap, **config}
        self._producers: dict[Credentials | None, Producer] = {}
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

    def producer(self, credentials: Credentials | None) -> Producer:
        with self._lock:
            if credentials not in self._producers:
                self._bounded(self._producers)
                self._producers[credentials] = Producer(
                    {**self.config(credentials), "enable.idempotence": True, "linger.ms": 5}
                )
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
            if isinstance(client, Producer):
                client.flush(5)

    def close(self) -> None:
        with self._lock:
            for producer in self._producers.values():
                producer.flush(5)
            self._producers.clear()
            self._admins.clear()
