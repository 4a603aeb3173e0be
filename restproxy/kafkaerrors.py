"""Kafka's errors in Confluent's words: the HTTP status and error code Confluent's proxy gives
an exception of that kind (rest-utils' KafkaExceptionMapper), for a whole request (an admin
call that failed) or for one record of a produce request (its delivery report's error)."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from restproxy.errors import RestError

UNKNOWN_TOPIC_OR_PARTITION = "This server does not host this topic-partition."

_AUTHORIZATION = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}
_AUTHENTICATION = {KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION}
_UNKNOWN_TOPIC = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
_BAD_REQUEST = {  # what Confluent answers 400 and 40002: the request, not the cluster, is at fault
    KafkaError.TOPIC_ALREADY_EXISTS,
    KafkaError.INVALID_PARTITIONS,
    KafkaError.INVALID_REPLICATION_FACTOR,
    KafkaError.INVALID_REQUEST,
    KafkaError.POLICY_VIOLATION,
    KafkaError.INVALID_CONFIG,
    KafkaError.UNSUPPORTED_VERSION,
    KafkaError.TOPIC_EXCEPTION,
    KafkaError.TOPIC_DELETION_DISABLED,
    KafkaError.UNKNOWN,
    KafkaError.SECURITY_DISABLED,
    KafkaError.INVALID_REPLICA_ASSIGNMENT,
}
_UNAVAILABLE = {KafkaError.BROKER_NOT_AVAILABLE, KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT}


def rest_error(error: KafkaError) -> RestError:
    """The RestError Confluent's proxy answers for this Kafka error."""
    code, message = error.code(), error.str()
    if code in _AUTHORIZATION:
        return RestError(403, 40301, message)
    if code in _AUTHENTICATION:
        return RestError(401, 40101, message)
    if code in _UNKNOWN_TOPIC:
        return RestError(404, 40403, UNKNOWN_TOPIC_OR_PARTITION)
    if code in _BAD_REQUEST:
        return RestError(400, 40002, message)
    if code in _UNAVAILABLE:
        return RestError(503, 50302, message)
    if error.retriable():
        return RestError(500, 50003, message)
    return RestError(500, 50002, message)


def from_exception(exc: KafkaException) -> RestError:
    """A KafkaException's error (its first argument, a KafkaError, or some other text)."""
    first = exc.args[0] if exc.args else None
    if isinstance(first, KafkaError):
        return rest_error(first)
    return RestError(500, 50002, str(first or exc))
