"""kafka-python's KafkaAdminClient, for the admin APIs confluent-kafka lacks.

confluent-kafka has no AlterPartitionReassignments, ListPartitionReassignments or
DescribeProducers, so kctl sends those through kafka-python. Its errors are exception
classes rather than librdkafka codes; this module turns them into kctl's one-line errors
and exit codes, as kctl.errors does for librdkafka.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from kafka import KafkaAdminClient
from kafka.errors import (InvalidReplicationAssignmentError, KafkaConnectionError, KafkaError,
                          KafkaTimeoutError, NoReassignmentInProgressError,
                          RequestTimedOutError, UnknownTopicOrPartitionError)

from kctl.client import Connection
from kctl.errors import KctlError
from kctl.exit_codes import ExitCode

T = TypeVar("T")

_UNREACHABLE = (KafkaTimeoutError, RequestTimedOutError, KafkaConnectionError)
_CODES = {UnknownTopicOrPartitionError: ExitCode.NOT_FOUND,
          InvalidReplicationAssignmentError: ExitCode.INVALID_INPUT,
          NoReassignmentInProgressError: ExitCode.CONFLICT}


def call(conn: Connection, doing: str, request: Callable[[KafkaAdminClient, int], T]) -> T:
    """One kafka-python admin request; its errors become one line and an exit code.

    A cluster that does not answer (no broker, a timeout) is exit 3, like librdkafka's.
    """
    timeout_ms = int(conn.timeout * 1000)
    try:
        admin = KafkaAdminClient(bootstrap_servers=conn.bootstrap.servers.split(","), client_id="kctl",
                                 request_timeout_ms=timeout_ms)
        try:
            return request(admin, timeout_ms)
        finally:
            admin.close()
    except KafkaError as exc:
        code = ExitCode.UNREACHABLE if isinstance(exc, _UNREACHABLE) else exit_code(type(exc))
        raise KctlError(f"cannot {doing} at {conn.bootstrap.servers}: {exc}", code) from None


def exit_code(error: type) -> ExitCode:
    """The exit code for a kafka-python error class (a broker's per-partition error, say)."""
    return next((c for cls, c in _CODES.items() if issubclass(error, cls)), ExitCode.ERROR)
