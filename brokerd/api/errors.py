"""Mapping exceptions onto Kafka error codes for responses."""

import logging

from kafka.errors import KafkaError

log = logging.getLogger(__name__)

NONE = 0
UNKNOWN_SERVER_ERROR = -1


def error_code(exc: Exception) -> int:
    """A Kafka error keeps its code; anything else is our bug, logged, and reported as such."""
    if isinstance(exc, KafkaError) and exc.errno is not None:
        return exc.errno
    log.error("unexpected error while handling a request", exc_info=exc)
    return UNKNOWN_SERVER_ERROR


def error_message(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
