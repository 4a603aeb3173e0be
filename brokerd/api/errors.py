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
    """What Kafka puts in a response's error message: the exception's own message, without
    kafka-python's "[Error N] Name:" prefix (the code already says which error it is)."""
    if isinstance(exc, KafkaError) and exc.args and exc.args[0]:
        return str(exc.args[0])
    return str(exc) or type(exc).__name__


def partition_results(
    results: dict[tuple[str, int], Exception | None], index_field: str
) -> dict[str, list[dict]]:
    """Per-partition outcomes (None for success) grouped by topic, as admin APIs answer them;
    ``index_field`` is what the API's schema calls the partition index."""
    by_topic: dict[str, list[dict]] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(
            {
                index_field: partition,
                "error_code": 0 if error is None else error_code(error),
                "error_message": None if error is None else error_message(error),
            }
        )
    return by_topic
