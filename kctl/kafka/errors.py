"""Kafka's errors as librdkafka reports them, and what they mean to kctl: the exit code of each,
and the one-line KctlError that says what could not be done and why.

KafkaError (an error's code and text) and KafkaException (what a client raises) are the types
commands see in delivery reports and failed client calls; they take them from here.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

_UNREACHABLE = {
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TIMED_OUT,
    KafkaError._MSG_TIMED_OUT,
    KafkaError._RESOLVE,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
    KafkaError._SSL,
}
_NOT_FOUND = {
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.UNKNOWN_TOPIC_ID,
    KafkaError.GROUP_ID_NOT_FOUND,
    KafkaError.RESOURCE_NOT_FOUND,
}
_INVALID_INPUT = {
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.INVALID_MSG_SIZE,
    KafkaError.INVALID_RECORD,
    KafkaError.RECORD_LIST_TOO_LARGE,
    KafkaError.TOPIC_EXCEPTION,
    KafkaError.INVALID_PARTITIONS,
    KafkaError.INVALID_REPLICATION_FACTOR,
    KafkaError.INVALID_REPLICA_ASSIGNMENT,
    KafkaError.INVALID_CONFIG,
    KafkaError.POLICY_VIOLATION,
    KafkaError._INVALID_ARG,
    KafkaError.INVALID_REQUIRED_ACKS,
    KafkaError.UNACCEPTABLE_CREDENTIAL,
    KafkaError.DUPLICATE_RESOURCE,
}
NOT_AUTHORIZED = {
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.ILLEGAL_SASL_STATE,
    KafkaError.UNSUPPORTED_SASL_MECHANISM,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}
FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
_CONFLICT = {
    KafkaError.NON_EMPTY_GROUP,
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.GROUP_SUBSCRIBED_TO_TOPIC,
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    KafkaError.PREFERRED_LEADER_NOT_AVAILABLE,
    KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE,
    *FENCED,
}


def exit_code_for(error: KafkaError) -> ExitCode:
    """The exit code a script should see for a librdkafka or broker error."""
    code = error.code()
    if code in _UNREACHABLE:
        return ExitCode.UNREACHABLE
    if code in _NOT_FOUND:
        return ExitCode.NOT_FOUND
    if code in NOT_AUTHORIZED:
        return ExitCode.NOT_AUTHORIZED
    if code in _INVALID_INPUT:
        return ExitCode.INVALID_INPUT
    if code in _CONFLICT:
        return ExitCode.CONFLICT
    return ExitCode.ERROR


def from_kafka(exc: KafkaException | KafkaError, doing: str) -> KctlError:
    """Wrap a librdkafka error as 'cannot <doing>: <reason>' with its exit code."""
    error = exc.args[0] if isinstance(exc, KafkaException) else exc
    if not isinstance(error, KafkaError):
        return KctlError(f"cannot {doing}: {error}")
    return KctlError(f"cannot {doing}: {error.str()}", exit_code_for(error))
