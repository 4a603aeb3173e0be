"""A REST proxy process (`python -m restproxy`) in front of a test's cluster and its schema
registry, always stopped, and raw HTTP calls to it with the content types of Confluent's API."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.schemaregistry.registry_harness import cluster_with_registry
from tests.service_harness import ServiceProcess

JSON_V2 = "application/vnd.kafka.json.v2+json"
BINARY_V2 = "application/vnd.kafka.binary.v2+json"
AVRO_V2 = "application/vnd.kafka.avro.v2+json"
JSONSCHEMA_V2 = "application/vnd.kafka.jsonschema.v2+json"
PROTOBUF_V2 = "application/vnd.kafka.protobuf.v2+json"


class ProxyProcess(ServiceProcess):
    def __init__(self, bootstrap: str, directory: Path, *extra: str) -> None:
        super().__init__("restproxy", bootstrap, directory, *extra)


@contextmanager
def proxy_with_registry(directory: Path, brokers: int = 1) -> Iterator[tuple[str, str, str]]:
    """A running cluster, its registry and a proxy using both: (bootstrap, registry URL, proxy URL)."""
    with (
        cluster_with_registry(directory, brokers) as (bootstrap, registry),
        ProxyProcess(bootstrap, directory, "--schema-registry", registry) as proxy,
    ):
        yield bootstrap, registry, proxy.url
