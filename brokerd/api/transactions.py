"""The transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn from producers to their
transaction coordinator, WriteTxnMarkers from a coordinator (or an admin aborting a hanging
transaction) to partition leaders, and the admin APIs DescribeTransactions and
ListTransactions. The state machine is in brokerd.coordinator."""

from __future__ import annotations

from kafka.errors import (
    InvalidProducerEpochError, OperationNotAttemptedError, ProducerFencedError,
    UnknownTopicOrPartitionError,
)

from brokerd.api.errors import error_code
from brokerd.api.offsets import partition_exists
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.coordinator.transaction_state import TransactionState
from brokerd.coordinator.txn_marker_writer import MARKER_ACK_TIMEOUT_S, TxnMarker, append_markers

FIRST_PRODUCER_FENCED_VERSION = 2  # of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn


def fenced_code(code: int, request, first_version: int = FIRST_PRODUCER_FENCED_VERSION) -> int:
    """PRODUCER_FENCED exists since KIP-588; older request versions get INVALID_PRODUCER_EPOCH,
    as Kafka answers them."""
    if code == ProducerFencedError.errno and request.header.api_version < first_version:
        return InvalidProducerEpochError.errno
    return code


async def handle_add_partitions(broker, request) -> dict:
    """Unknown partitions fail the request: they get UNKNOWN_TOPIC_OR_PARTITION, the others
    OPERATION_NOT_ATTEMPTED, as in Kafka."""
    body = request.body
    wanted = {(t.name, p) for t in body.v3_and_below_topics for p in t.partitions}
    unknown = {tp for tp in wanted if not partition_exists(broker, *tp)}
    if unknown:
        codes = {tp: UnknownTopicOrPartitionError.errno if tp in unknown
                 else OperationNotAttemptedError.errno for tp in wanted}
    else:
        try:
            await broker.transactions.add_partitions(
                body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
                body.v3_and_below_producer_epoch, wanted)
            code = 0
        except Exception as exc:
            code = fenced_code(error_code(exc), request)
        codes = dict.fromkeys(wanted, code)
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": t.name, "results_by_partition": [
            {"partition_index": p, "partition_error_code": codes[(t.name, p)]}
            for p in t.partitions]}
        for t in body.v3_and_below_topics]}


async def handle_add_offsets(broker, request) -> dict:
    """The group's __consumer_offsets partition joins the transaction, so that the marker
    reaches the offsets the producer commits with TxnOffsetCommit."""
    body = request.body
    try:
        if OFFSETS_TOPIC not in broker.topics:
            broker.auto_create_topic(OFFSETS_TOPIC)
        partition = (OFFSETS_TOPIC, broker.coordinator.partition_of(body.group_id))
        await broker.transactions.add_partitions(body.transactional_id, body.producer_id,
                                                 body.producer_epoch, {partition})
    except Exception as exc:
        return {"throttle_time_ms": 0, "error_code": fenced_code(error_code(exc), request)}
    return {"throttle_time_ms": 0, "error_code": 0}


async def handle_end_txn(broker, request) -> dict:
    body = request.body
    try:
        await broker.transactions.end_txn(body.transactional_id, body.producer_id,
                                          body.producer_epoch, body.committed)
    except Exception as exc:
        return {"throttle_time_ms": 0, "error_code": fenced_code(error_code(exc), request)}
    return {"throttle_time_ms": 0, "error_code": 0}


async def handle_write_markers(broker, request) -> dict:
    """A transaction coordinator on another broker ends transactions on partitions led here."""
    results = []
    for m in request.body.markers:
        marker = TxnMarker(m.producer_id, m.producer_epoch, m.transaction_result,
                           m.coordinator_epoch)
        partitions = [(t.name, p) for t in m.topics for p in t.partition_indexes]
        errors = await append_markers(broker, marker, partitions, MARKER_ACK_TIMEOUT_S)
        results.append({"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [
                {"partition_index": p, "error_code": _code(errors[(t.name, p)])}
                for p in t.partition_indexes]}
            for t in m.topics]})
    return {"markers": results}


def _code(exc: Exception | None) -> int:
    return 0 if exc is None else error_code(exc)


async def handle_describe(broker, request) -> dict:
    return {"throttle_time_ms": 0, "transaction_states": [
        _description(broker, t) for t in request.body.transactional_ids]}


def _description(broker, transactional_id: str) -> dict:
    try:
        meta = broker.transactions.describe(transactional_id)
    except Exception as exc:
        return {"error_code": error_code(exc), "transactional_id": transactional_id,
                "transaction_state": "", "transaction_timeout_ms": 0,
                "transaction_start_time_ms": -1, "producer_id": -1, "producer_epoch": -1,
                "topics": []}
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(index)
    return {"error_code": 0, "transactional_id": transactional_id,
            "transaction_state": meta.state.label, "transaction_timeout_ms": meta.timeout_ms,
            "transaction_start_time_ms": meta.start_ms, "producer_id": meta.producer_id,
            "producer_epoch": meta.producer_epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}


async def handle_list(broker, request) -> dict:
    """Transactions coordinated by this broker; unknown state names are reported back."""
    body = request.body
    known = {state.label for state in TransactionState}
    states = set(body.state_filters or ())
    listed = broker.transactions.list_transactions(
        states & known, set(body.producer_id_filters or ()),
        body.duration_filter)
    return {"throttle_time_ms": 0, "error_code": 0,
            "unknown_state_filters": sorted(states - known),
            "transaction_states": [{"transactional_id": m.transactional_id,
                                    "producer_id": m.producer_id,
                                    "transaction_state": m.state.label} for m in listed]}
