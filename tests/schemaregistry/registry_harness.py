"""A schema registry process (`python -m schemaregistry`) for a test's cluster, always stopped,
and raw HTTP calls to it with the registry's content type."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from tests import service_harness
from tests.cluster_harness import running_cluster
from tests.service_harness import ServiceProcess

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

call = partial(service_harness.call, content_type=CONTENT_TYPE)
declare_body = partial(service_harness.declare_body, content_type=CONTENT_TYPE)


class RegistryProcess(ServiceProcess):
    def __init__(self, bootstrap: str, directory: Path, *extra: str) -> None:
        super().__init__("schemaregistry", bootstrap, directory, *extra)


@contextmanager
def cluster_with_registry(directory: Path, brokers: int = 1) -> Iterator[tuple[str, str]]:
    """A running cluster and its registry, for a module's tests: (bootstrap, registry URL)."""
    with (
        running_cluster(directory / "cluster", brokers) as cluster,
        RegistryProcess(cluster.bootstrap, directory) as registry,
    ):
        yield cluster.bootstrap, registry.url
