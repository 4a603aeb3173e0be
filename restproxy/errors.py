"""Confluent REST Proxy's errors: an HTTP status, an error code and a message, answered as
`{"error_code": ..., "message": ...}` (kafka-rest's Errors.java; v3 uses the same shape)."""

from __future__ import annotations

from httpservice.errors import ServiceError


class RestError(ServiceError):
    """An answer of the proxy other than success."""


def topic_not_found(topic: str | None = None) -> RestError:
    return RestError(404, 40401, "Topic not found." if topic is None else f"Topic {topic} not found.")


def partition_not_found(partition: int | None = None) -> RestError:
    return RestError(
        404, 40402, "Partition not found." if partition is None else f"Partition {partition} not found."
    )


def consumer_instance_not_found() -> RestError:
    return RestError(404, 40403, "Consumer instance not found.")


def leader_not_available() -> RestError:
    return RestError(404, 40404, "Leader not available.")


def consumer_group_not_found(group: str) -> RestError:
    return RestError(404, 40405, f"Consumer group {group} not found.")


def format_mismatch(expected: str, asked: str) -> RestError:
    return RestError(
        406,
        40601,
        f"The requested embedded data format ({asked}) does not match the consumer's ({expected}).",
    )


def already_subscribed() -> RestError:
    return RestError(
        409,
        40901,
        "Consumer cannot subscribe the the specified target because it has already subscribed to "
        "other topics.",
    )


def consumer_already_exists(name: str) -> RestError:
    return RestError(
        409,
        40902,
        f"Consumer with specified consumer ID {name} already exists in the specified consumer group.",
    )


def illegal_state(message: str) -> RestError:
    return RestError(409, 40903, f"Illegal state: {message}")


def key_schema_missing() -> RestError:
    return RestError(
        422,
        42201,
        "Request includes keys and uses a format that requires schemas, but does not include the "
        "key_schema or key_schema_id fields",
    )


def value_schema_missing() -> RestError:
    return RestError(
        422,
        42202,
        "Request includes values and uses a format that requires schemas, but does not include the "
        "value_schema or value_schema_id fields",
    )


def json_conversion(message: str) -> RestError:
    return RestError(422, 42203, f"Conversion of JSON to object failed: {message}")


def invalid_consumer_config(message: str) -> RestError:
    return RestError(422, 42204, f"Invalid consumer configuration: {message}")


def invalid_schema(message: str) -> RestError:
    return RestError(422, 42205, f"Invalid schema: {message}")


def invalid_payload(message: str) -> RestError:
    return RestError(422, 42206, f"Invalid payload: {message}")


def serialization(message: str) -> RestError:
    return RestError(422, 42207, f"Error serializing message. {message}")


def kafka_error(message: str) -> RestError:
    return RestError(500, 50002, f"Kafka error: {message}")


def kafka_retriable(message: str) -> RestError:
    return RestError(500, 50003, f"Kafka retriable error: {message}")


def broker_unavailable(message: str) -> RestError:
    return RestError(503, 50302, f"Broker not available: {message}")


def not_authorized(message: str) -> RestError:
    return RestError(403, 40301, f"Not authorized: {message}")
