"""The transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn from producers to their
transaction coordinator, WriteTxnMarkers from a coordinator (or an admin aborting a hanging
transaction) to partition leaders, and the admin APIs DescribeTransactions and
ListTransactions. The state machine is in brokerd.coordinator.

Permissions are Kafka's: a producer needs WRITE on its transactional id for each of its
requests (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and WRITE on each topic it adds
(else TOPIC_AUTHORIZATION_FAILED; an internal topic is never added) or READ on the group whose
offsets it adds (else GROUP_AUTHORIZATION_FAILED). WriteTxnMarkers needs ALTER or
CLUSTER_ACTION on the cluster (brokers send it as the super user). Describing a transaction
needs DESCRIBE on its transactional id and shows only the topics the client may DESCRIBE;
listing shows only the transactional ids it may DESCRIBE.
"""

from __future__ import annotations

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import (
    InvalidProducerEpochError,
    OperationNotAttemptedError,
    ProducerFencedError,
    UnknownTopicOrPartitionError,
)

from brokerd.api.authorization import (
    Permission,
    allows_cluster,
    cluster_refusal,
    denied_code,
    refusal,
    require,
    require_group,
)
from brokerd.api.errors import error_code
from brokerd.api.offsets import partition_exists
from brokerd.api.request import Request
from brokerd.coordinator import INTERNAL_TOPICS
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.coordinator.transaction_state import TransactionState
from brokerd.coordinator.txn_marker_writer import MARKER_ACK_TIMEOUT_S, TxnMarker
from brokerd.ports.services import BrokerServices

FIRST_PRODUCER_FENCED_VERSION = 2  # of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn


def fenced_code(code: int, api_version: int, first_version: int = FIRST_PRODUCER_FENCED_VERSION) -> int:
    """PRODUCER_FENCED exists since KIP-588; older request versions get INVALID_PRODUCER_EPOCH,
    as Kafka answers them."""
    if code == ProducerFencedError.errno and api_version < first_version:
        return InvalidProducerEpochError.errno
    return code


async def handle_add_partitions(services: BrokerServices, request: Request) -> dict:
    """Refused or unknown partitions fail the request: they get TOPIC_AUTHORIZATION_FAILED or
    UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED, as in Kafka."""
    body = request.body
    wanted = {(t.name, p) for t in body.v3_and_below_topics for p in t.partitions}
    refused = refusal(
        services.security.authorizer,
        request.session,
        ACLOperation.WRITE,
        ResourceType.TRANSACTIONAL_ID,
        body.v3_and_below_transactional_id,
    )
    if refused is not None:
        codes = dict.fromkeys(wanted, error_code(refused))
    elif failed := _unaddable(services, request, wanted):
        codes = {tp: failed.get(tp, OperationNotAttemptedError.errno) for tp in wanted}
    else:
        try:
            await services.transactions.coordinator.add_partitions(
                body.v3_and_below_transactional_id,
                body.v3_and_below_producer_id,
                body.v3_and_below_producer_epoch,
                wanted,
            )
            code = 0
        except Exception as exc:
            code = fenced_code(error_code(exc), request.header.api_version)
        codes = dict.fromkeys(wanted, code)
    return {
        "throttle_time_ms": 0,
        "results_by_topic_v3_and_below": [
            {
                "name": t.name,
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": codes[(t.name, p)]} for p in t.partitions
                ],
            }
            for t in body.v3_and_below_topics
        ],
    }


def _unaddable(
    services: BrokerServices, request: Request, wanted: set[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """The partitions that cannot join a transaction, with their error codes."""
    writable = Permission(services.security.authorizer, request.session, ACLOperation.WRITE)
    failed = {}
    for topic, partition in wanted:
        if topic in INTERNAL_TOPICS or not writable.allows(topic):  # Kafka's rule for both
            failed[(topic, partition)] = denied_code(ResourceType.TOPIC)
        elif not partition_exists(services, topic, partition):
            failed[(topic, partition)] = UnknownTopicOrPartitionError.errno
    return failed


async def handle_add_offsets(services: BrokerServices, request: Request) -> dict:
    """The group's __consumer_offsets partition joins the transaction, so that the marker
    reaches the offsets the producer commits with TxnOffsetCommit."""
    body = request.body
    try:
        require(
            services.security.authorizer,
            request.session,
            ACLOperation.WRITE,
            ResourceType.TRANSACTIONAL_ID,
            body.transactional_id,
        )
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        if OFFSETS_TOPIC not in services.metadata.topics:
            services.metadata.auto_create_topic(OFFSETS_TOPIC)
        partition = (OFFSETS_TOPIC, services.groups.partition_of(body.group_id))
        await services.transactions.coordinator.add_partitions(
            body.transactional_id, body.producer_id, body.producer_epoch, {partition}
        )
    except Exception as exc:
        return {"throttle_time_ms": 0, "error_code": fenced_code(error_code(exc), request.header.api_version)}
    return {"throttle_time_ms": 0, "error_code": 0}


async def handle_end_txn(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        require(
            services.security.authorizer,
            request.session,
            ACLOperation.WRITE,
            ResourceType.TRANSACTIONAL_ID,
            body.transactional_id,
        )
        await services.transactions.coordinator.end_txn(
            body.transactional_id, body.producer_id, body.producer_epoch, body.committed
        )
    except Exception as exc:
        return {"throttle_time_ms": 0, "error_code": fenced_code(error_code(exc), request.header.api_version)}
    return {"throttle_time_ms": 0, "error_code": 0}


async def handle_write_markers(services: BrokerServices, request: Request) -> dict:
    """A transaction coordinator on another broker ends transactions on partitions led here."""
    refused = (
        None
        if allows_cluster(services.security.authorizer, request.session, ACLOperation.ALTER, audit=False)
        else cluster_refusal(services.security.authorizer, request.session, ACLOperation.CLUSTER_ACTION)
    )
    results = []
    for m in request.body.markers:
        marker = TxnMarker(m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch)
        partitions = [(t.name, p) for t in m.topics for p in t.partition_indexes]
        errors = (
            dict.fromkeys(partitions, refused)
            if refused is not None
            else await services.transactions.markers.append(marker, partitions, MARKER_ACK_TIMEOUT_S)
        )
        results.append(
            {
                "producer_id": m.producer_id,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {"partition_index": p, "error_code": _code(errors[(t.name, p)])}
                            for p in t.partition_indexes
                        ],
                    }
                    for t in m.topics
                ],
            }
        )
    return {"markers": results}


def _code(exc: Exception | None) -> int:
    return 0 if exc is None else error_code(exc)


async def handle_describe(services: BrokerServices, request: Request) -> dict:
    describable = Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    return {
        "throttle_time_ms": 0,
        "transaction_states": [
            _description(services, request, t, describable) for t in request.body.transactional_ids
        ],
    }


def _description(
    services: BrokerServices, request: Request, transactional_id: str, describable: Permission
) -> dict:
    try:
        require(
            services.security.authorizer,
            request.session,
            ACLOperation.DESCRIBE,
            ResourceType.TRANSACTIONAL_ID,
            transactional_id,
        )
        meta = services.transactions.coordinator.describe(transactional_id)
    except Exception as exc:
        return {
            "error_code": error_code(exc),
            "transactional_id": transactional_id,
            "transaction_state": "",
            "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(meta.partitions):
        if describable.allows(topic):
            by_topic.setdefault(topic, []).append(index)
    return {
        "error_code": 0,
        "transactional_id": transactional_id,
        "transaction_state": meta.state.label,
        "transaction_timeout_ms": meta.timeout_ms,
        "transaction_start_time_ms": meta.start_ms,
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
    }


async def handle_list(services: BrokerServices, request: Request) -> dict:
    """Transactions coordinated by this broker; unknown state names are reported back."""
    body = request.body
    known = {state.label for state in TransactionState}
    states = set(body.state_filters or ())
    listed = services.transactions.coordinator.list_transactions(
        states & known, set(body.producer_id_filters or ()), body.duration_filter
    )
    describable = Permission(
        services.security.authorizer, request.session, ACLOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID
    )
    listed = [m for m in listed if describable.allows(m.transactional_id)]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "unknown_state_filters": sorted(states - known),
        "transaction_states": [
            {
                "transactional_id": m.transactional_id,
                "producer_id": m.producer_id,
                "transaction_state": m.state.label,
            }
            for m in listed
        ],
    }
