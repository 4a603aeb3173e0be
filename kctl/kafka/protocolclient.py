"""Kafka requests no admin client has a call for, each sent to the broker that must answer it.

confluent-kafka's and kafka-python's admin clients leave out some of Kafka's APIs (KIP-848's
ConsumerGroupDescribe, KIP-932's share group APIs, kafka-python's client quota requests), so
kctl sends those requests itself, through kafka-python's network client (KafkaNetClient, the
client its admin client is built on) and only by its public calls: the client connects,
authenticates with the connection's security settings and picks each request's version.
What a request needs beside that is here: the brokers, a group's coordinator
(FindCoordinator), and kafka-python's errors as kctl's (pyadmin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from kafka.errors import for_code
from kafka.net.compat import KafkaNetClient
from kafka.protocol.metadata import FindCoordinatorRequest

from kctl.kafka import pyadmin
from kctl.kafka.client import Connection

T = TypeVar("T")
GROUP_COORDINATOR = 0  # FindCoordinator's key type for a group (consumer, classic or share)


class ProtocolClient:
    """One session's requests to the cluster: each answered before the next is sent."""

    def __init__(self, client: KafkaNetClient, timeout_ms: int):
        self._client = client
        self._timeout_ms = timeout_ms

    def send(self, request: Any, node_id: int | None = None) -> Any:
        """The response to ``request`` from broker ``node_id``, or from any broker."""
        node = self._client.least_loaded_node() if node_id is None else node_id
        return self._client.send_and_receive(node, request, timeout_ms=self._timeout_ms)

    def broker_ids(self) -> list[int]:
        """Every broker of the cluster, as its metadata names them."""
        return sorted(broker.node_id for broker in self._client.cluster.brokers())

    def address(self, node_id: int) -> dict | None:
        """A broker as kctl's documents name it: {"id", "host", "port"}; None if unknown."""
        broker = self._client.cluster.broker_metadata(node_id)
        return None if broker is None else {"id": broker.node_id, "host": broker.host, "port": broker.port}

    def group_coordinator(self, group_id: str) -> int:
        """The broker that coordinates group ``group_id``: FindCoordinator for one key, which
        every version up to 3 asks (v4 asks for several, and not every broker has it)."""
        request = FindCoordinatorRequest(key=group_id, key_type=GROUP_COORDINATOR, max_version=3)
        response = self.send(request)
        if response.error_code:
            raise for_code(response.error_code)(response.error_message)
        return response.node_id


def session(conn: Connection, doing: str, work: Callable[[ProtocolClient], T]) -> T:
    """Run ``work`` with a client of the connection's cluster, closed afterwards; its errors
    become one line and an exit code, as pyadmin's do."""
    settings = pyadmin.client_settings(conn)
    with pyadmin.translated_errors(conn, doing):
        client = KafkaNetClient(**settings)
        try:
            # the first answer gives the cluster's brokers and the versions of their APIs
            client.check_version(timeout_ms=settings["request_timeout_ms"])
            return work(ProtocolClient(client, settings["request_timeout_ms"]))
        finally:
            client.close()
