"""What the proxy's routes share: the cluster's Kafka clients for each user, the schema
registry (for the Avro, JSON Schema and Protobuf embedded formats) and the proxy's settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import Request

from restproxy.clients import Clients, Credentials
from schemaregistry.client import RegistryClient


@dataclass(frozen=True)
class Settings:
    consumer_instance_timeout_ms: int = 300_000  # an idle v2 consumer instance is destroyed
    consumer_request_timeout_ms: int = 1_000  # how long GET .../records waits for records at most
    max_records_per_produce: int = 10_000  # per request body (v2) or per stream (v3) at once
    advertised_url: str = ""  # how base_uri names this proxy


@dataclass
class ProxyContext:
    clients: Clients
    registry_url: str | None
    settings: Settings = field(default_factory=Settings)
    own_login: Credentials | None = None  # the proxy's own SASL user, for the registry too
    on_close: list[Callable[[], None]] = field(default_factory=list)  # routes' own clean-up

    def registry_client(self) -> RegistryClient | None:
        """The proxy's own client of the registry (with its own SASL user where the registry
        asks for one, as a secured cluster's does), for what no user's request names."""
        if self.registry_url is None:
            return None
        user, password = self.own_login or (None, None)
        return RegistryClient(self.registry_url, user, password)

    def close(self) -> None:
        """Stop what the routes started (consumer instances, producers' pending deliveries)."""
        for closing in self.on_close:
            closing()
        self.clients.close()

    @staticmethod
    def credentials(request: Request) -> Credentials | None:
        """The user the request authenticated as (HTTP basic auth on a secured cluster), whom
        the proxy acts for on the brokers; None when the cluster is not secured."""
        found = request.scope.get("user_credentials")
        return None if found is None else (str(found[0]), str(found[1]))
