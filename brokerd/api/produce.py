"""Produce: append each partition's record batch as it arrived, bytes in, bytes on disk.

As in Kafka, a request carrying transactional batches needs WRITE on its transactional id
(else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each topic WRITE on
the topic (else its partitions answer TOPIC_AUTHORIZATION_FAILED): one check per topic and
request, none per record.
"""

from __future__ import annotations

import asyncio

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import (
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    UnsupportedVersionError,
)

from brokerd.api.authorization import Permission, denied, refusal
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.coordinator import INTERNAL_TOPICS
from brokerd.partition import Partition
from brokerd.ports.services import BrokerServices
from brokerd.protocol.api_versions import MIN_ACCEPTED_PRODUCE_VERSION
from brokerd.security.standard_authorizer import StandardAuthorizer
from brokerd.share.share_state import SHARE_STATE_TOPIC
from brokerd.storage.partition_log import AppendInfo
from brokerd.storage.record_batch import CURRENT_MAGIC, HEADER_SIZE, MAGIC_POSITION, read_header

ACKS = (0, 1, -1)


async def handle(services: BrokerServices, request: Request) -> dict | None:
    body = request.body
    version = request.header.api_version
    responses = []
    pending = []
    writable = Permission(services.security.authorizer, request.session, ACLOperation.WRITE)
    txn_refused = _transactional_refusal(services.security.authorizer, request)
    for topic in body.topic_data:
        refused = txn_refused or writable.refusal(topic.name)
        partitions = []
        for p in topic.partition_data:
            result, partition, info = _append(
                services, topic.name, p.index, p.records, version, body.acks, refused
            )
            partitions.append(result)
            if body.acks == -1 and partition is not None and info is not None:
                pending.append(
                    _await_replication(result, partition, info.last_offset, body.timeout_ms / 1000)
                )
        responses.append({"name": topic.name, "partition_responses": partitions})
    await asyncio.gather(*pending)
    if body.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


async def _await_replication(result: dict, partition: Partition, last_offset: int, timeout_s: float) -> None:
    """acks=all: the answer waits until the in-sync replicas have the batch (or an error)."""
    try:
        await partition.wait_for_ack(last_offset, timeout_s)
    except Exception as exc:
        result.update(error_code=error_code(exc), error_message=error_message(exc))


def _transactional_refusal(authorizer: StandardAuthorizer, request: Request) -> Exception | None:
    """TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a request with transactional batches whose
    session may not WRITE its transactional id (or that names none); Kafka looks at the first
    batch of each partition."""
    if not authorizer.enabled:
        return None
    body = request.body
    if not any(_starts_transactional(p.records) for t in body.topic_data for p in t.partition_data):
        return None
    transactional_id = getattr(body, "transactional_id", None)
    if transactional_id is None:
        return denied(ResourceType.TRANSACTIONAL_ID)
    return refusal(
        authorizer,
        request.session,
        ACLOperation.WRITE,
        ResourceType.TRANSACTIONAL_ID,
        transactional_id,
    )


def _starts_transactional(records) -> bool:
    return (
        records is not None
        and len(records) >= HEADER_SIZE
        and records[MAGIC_POSITION] == CURRENT_MAGIC
        and read_header(records).is_transactional
    )


def _append(
    services: BrokerServices,
    topic: str,
    index: int,
    records,
    version: int,
    acks: int,
    refused: Exception | None,
) -> tuple[dict, Partition | None, AppendInfo | None]:
    """Append one partition's batch; returns (response entry, partition, append info)."""
    try:
        if version < MIN_ACCEPTED_PRODUCE_VERSION:
            raise UnsupportedVersionError("produce v0-v2 (message format v0/v1) is not accepted")
        if acks not in ACKS:
            raise InvalidRequiredAcksError(f"acks must be 0, 1 or -1, got {acks}")
        if refused is not None:
            raise refused
        if not records:
            raise InvalidRecordError("produce request without a record batch")
        if topic in INTERNAL_TOPICS:
            raise InvalidTopicError(f"{topic} is written by its coordinator only")
        partition = services.replicas.get_leader(topic, index)
        if topic == SHARE_STATE_TOPIC:  # a stale share-partition snapshot is refused here
            info = services.share.state_epochs.append(index, partition, records, acks)
        else:
            info = partition.append_as_leader(records, acks)
    except Exception as exc:
        return (
            {
                "index": index,
                "error_code": error_code(exc),
                "base_offset": -1,
                "log_append_time_ms": -1,
                "log_start_offset": -1,
                "record_errors": _record_errors(exc),
                "error_message": error_message(exc),
            },
            None,
            None,
        )
    return (
        {
            "index": index,
            "error_code": 0,
            "base_offset": info.first_offset,
            "log_append_time_ms": info.log_append_time,
            "log_start_offset": partition.log.log_start_offset,
            "error_message": None,
        },
        partition,
        info,
    )


def _record_errors(exc: Exception) -> list[dict]:
    """Produce v8+: which records of the batch were refused (INVALID_RECORD), and why."""
    return [
        {"batch_index": index, "batch_index_error_message": message}
        for index, message in getattr(exc, "record_errors", ())
    ]
