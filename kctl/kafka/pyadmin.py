"""kafka-python's KafkaAdminClient, for the admin APIs confluent-kafka lacks.

confluent-kafka has no AlterPartitionReassignments, ListPartitionReassignments,
DescribeProducers, DescribeClientQuotas or AlterClientQuotas, so kctl sends those through
kafka-python (kctl.kafka.reassignments, topics, quotas). Its errors are exception classes
rather than librdkafka codes; this module turns them into kctl's one-line errors and exit
codes, as kctl.kafka.errors does for librdkafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from kafka import KafkaAdminClient
from kafka.errors import (
    AuthorizationError,
    IllegalSaslStateError,
    InvalidReplicationAssignmentError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoReassignmentInProgressError,
    RequestTimedOutError,
    SaslAuthenticationFailedError,
    UnknownTopicOrPartitionError,
    UnsupportedSaslMechanismError,
)

from kctl.kafka.client import Connection
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

T = TypeVar("T")

_SECURITY = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
}
_UNREACHABLE = (KafkaTimeoutError, RequestTimedOutError, KafkaConnectionError)
_CODES = {
    UnknownTopicOrPartitionError: ExitCode.NOT_FOUND,
    InvalidReplicationAssignmentError: ExitCode.INVALID_INPUT,
    NoReassignmentInProgressError: ExitCode.CONFLICT,
    AuthorizationError: ExitCode.NOT_AUTHORIZED,
    SaslAuthenticationFailedError: ExitCode.NOT_AUTHORIZED,
    IllegalSaslStateError: ExitCode.NOT_AUTHORIZED,
    UnsupportedSaslMechanismError: ExitCode.NOT_AUTHORIZED,
}


def call(conn: Connection, doing: str, request: Callable[[KafkaAdminClient, int], T]) -> T:
    """One kafka-python admin request; its errors become one line and an exit code."""
    timeout_ms = int(conn.timeout * 1000)
    with translated_errors(conn, doing):
        admin = KafkaAdminClient(**client_settings(conn))
        try:
            return request(admin, timeout_ms)
        finally:
            admin.close()


def client_settings(conn: Connection) -> dict[str, Any]:
    """A kafka-python client's settings for the connection: its brokers, timeout and security."""
    return {
        "bootstrap_servers": conn.bootstrap.servers.split(","),
        "client_id": "kctl",
        "request_timeout_ms": int(conn.timeout * 1000),
        **security(conn.client_settings()),
    }


@contextmanager
def translated_errors(conn: Connection, doing: str) -> Iterator[None]:
    """kafka-python's errors within, as one line and an exit code: a cluster that does not
    answer (no broker, a timeout) is exit 3, like librdkafka's."""
    try:
        yield
    except KafkaError as exc:
        code = ExitCode.UNREACHABLE if isinstance(exc, _UNREACHABLE) else exit_code(type(exc))
        raise KctlError(f"cannot {doing} at {conn.bootstrap.servers}: {exc}", code) from None


def security(settings: dict[str, str]) -> dict[str, object]:
    """kafka-python's names for the librdkafka security settings among `settings`, so a
    secured cluster sees the same principal whichever client library kctl uses."""
    translated: dict[str, object] = {_SECURITY[k]: v for k, v in settings.items() if k in _SECURITY}
    if settings.get("ssl.endpoint.identification.algorithm", "https").lower() == "none":
        translated["ssl_check_hostname"] = False
    return translated


def exit_code(error: type) -> ExitCode:
    """The exit code for a kafka-python error class (a broker's per-partition error, say)."""
    return next((c for cls, c in _CODES.items() if issubclass(error, cls)), ExitCode.ERROR)
