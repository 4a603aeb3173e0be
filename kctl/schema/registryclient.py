"""The schema registry client for a kctl command: the URL resolved as kctl.schema.locate says,
and the registry's errors turned into kctl's one-line errors and exit codes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from kctl.kafka.bootstrap import resolve_cluster_dir
from kctl.schema.locate import registry_url
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from schemaregistry.client import RegistryClient, RegistryClientError, RegistryError, RegistryUnreachable

T = TypeVar("T")


def client(option: str | None, cluster_dir: Path | None, timeout: float) -> RegistryClient:
    directory = resolve_cluster_dir(cluster_dir)
    return registry_client(registry_url(option, directory), directory, timeout)


def registry_client(url: str, cluster_dir: Path, timeout: float) -> RegistryClient:
    """A client of the registry at `url`, with the credentials in the URL (http://USER:PASSWORD@...)
    or else those of the local cluster's super user when the cluster is SASL-secured (its
    registry accepts the cluster's users), as kctl uses them for the brokers."""
    from brokerd.security import client_properties

    settings = client_properties.read(client_properties.path(cluster_dir))
    user, password = settings.get("sasl.username"), settings.get("sasl.password")
    if "@" in url.partition("://")[2].partition("/")[0] or user is None:
        return RegistryClient(url, timeout=timeout)
    return RegistryClient(url, user, password, timeout=timeout)


def exit_code(error: RegistryError) -> ExitCode:
    """Confluent's error codes as kctl's exit codes: 404xx not found, 409 incompatible (a
    conflict), 422xx and 400 bad input, 401/403 not authorized."""
    status = error.status
    if status == 404:
        return ExitCode.NOT_FOUND
    if status == 409:
        return ExitCode.CONFLICT
    if status in (400, 413, 415, 422):
        return ExitCode.INVALID_INPUT
    if status in (401, 403):
        return ExitCode.NOT_AUTHORIZED
    return ExitCode.ERROR


@contextmanager
def registry_errors() -> Iterator[None]:
    """Registry failures as one-line kctl errors."""
    try:
        yield
    except RegistryUnreachable as exc:
        raise KctlError(str(exc), ExitCode.UNREACHABLE) from None
    except RegistryError as exc:  # one line, even when the message quotes a schema's text
        raise KctlError(" ".join(exc.message.split()), exit_code(exc)) from None
    except RegistryClientError as exc:
        raise KctlError(f"schema registry: {exc}", ExitCode.ERROR) from None


def call(action: Callable[[], T]) -> T:
    with registry_errors():
        return action()
