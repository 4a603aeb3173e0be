"""Produce: append each partition's record batch as it arrived, bytes in, bytes on disk."""

from __future__ import annotations

from kafka.errors import InvalidRecordError, InvalidRequiredAcksError, UnsupportedVersionError

from brokerd.api.errors import error_code, error_message
from brokerd.protocol.api_versions import MIN_ACCEPTED_PRODUCE_VERSION

ACKS = (0, 1, -1)


async def handle(broker, request) -> dict | None:
    body = request.body
    version = request.header.api_version
    responses = []
    for topic in body.topic_data:
        partitions = [_append(broker, topic.name, p.index, p.records, version, body.acks)
                      for p in topic.partition_data]
        responses.append({"name": topic.name, "partition_responses": partitions})
    if body.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


def _append(broker, topic: str, index: int, records, version: int, acks: int) -> dict:
    try:
        if version < MIN_ACCEPTED_PRODUCE_VERSION:
            raise UnsupportedVersionError("produce v0-v2 (message format v0/v1) is not accepted")
        if acks not in ACKS:
            raise InvalidRequiredAcksError(f"acks must be 0, 1 or -1, got {acks}")
        if not records:
            raise InvalidRecordError("produce request without a record batch")
        partition = broker.replicas.get_leader(topic, index)
        info = partition.append_as_leader(records)
    except Exception as exc:
        return {"index": index, "error_code": error_code(exc), "base_offset": -1,
                "log_append_time_ms": -1, "log_start_offset": -1,
                "error_message": error_message(exc)}
    return {"index": index, "error_code": 0, "base_offset": info.first_offset,
            "log_append_time_ms": info.log_append_time, "log_start_offset":
            partition.log.log_start_offset, "error_message": None}
