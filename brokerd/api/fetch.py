"""Fetch: whole batches from the one holding the fetch offset, long-polled up to MaxWaitMs.

No fetch sessions (session id 0, every requested partition in every response), records never
null (librdkafka treats a null record set as a parse failure). read_committed consumers
(isolation level 1) read up to the last stable offset and get the aborted transactions of
the range returned; read_uncommitted ones get a null list, as from Kafka.
"""

from __future__ import annotations

import asyncio

from brokerd.api.errors import error_code
from brokerd.partition import wait_any
from brokerd.storage import last_offset_in

READ_COMMITTED = 1


async def handle(broker, request) -> dict:
    body = request.body
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(body.max_wait_ms, 0) / 1000
    while True:
        responses, total_bytes, partitions = _read_all(broker, body)
        remaining = deadline - loop.time()
        if total_bytes >= body.min_bytes or remaining <= 0 or not partitions:
            break
        await wait_any(partitions, remaining)
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


def _read_all(broker, body) -> tuple[list[dict], int, list]:
    """One pass over the requested partitions.

    The whole response stays within the request's max_bytes and each partition within its
    partition_max_bytes; only the response's very first batch may exceed them (Kafka's
    minOneMessage), so a consumer is never stuck behind a big batch and never gets more
    than it can take (librdkafka drops the connection on an oversized response).
    """
    total = 0
    watched = []
    responses = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            limit = max(min(p.partition_max_bytes, body.max_bytes - total), 0)
            result, partition = _read_partition(broker, body, topic.topic, p, limit, total == 0)
            size = len(result["records"])
            total += size
            if partition is not None and size == 0:
                watched.append(partition)
            partitions.append(result)
        responses.append({"topic": topic.topic, "partitions": partitions})
    return responses, total, watched


def _read_partition(broker, body, topic: str, request, max_bytes: int, min_one_message: bool):
    """Consumers read up to the high watermark (read_committed ones up to the last stable
    offset); a follower (replica_id >= 0) reads up to the log end, and its fetch offset tells
    the leader how far its log reaches."""
    index = request.partition
    follower = body.replica_id >= 0
    read_committed = body.isolation_level == READ_COMMITTED and not follower
    try:
        partition = broker.replicas.get_leader(topic, index)
        partition.check_leader_epoch(request.current_leader_epoch)
        if follower:
            partition.record_follower_fetch(body.replica_id, request.fetch_offset,
                                             request.log_start_offset)
        records = (partition.read(request.fetch_offset, max_bytes, for_follower=follower,
                                  read_committed=read_committed, min_one_message=min_one_message)
                   if max_bytes > 0 else b"")
        aborted = _aborted_transactions(partition, request.fetch_offset, records) if read_committed else None
    except Exception as exc:
        return {"partition_index": index, "error_code": error_code(exc), "high_watermark": -1,
                "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                "preferred_read_replica": -1, "records": b""}, None
    return {"partition_index": index, "error_code": 0,
            "high_watermark": partition.high_watermark,
            "last_stable_offset": partition.last_stable_offset,
            "log_start_offset": partition.log.log_start_offset,
            "aborted_transactions": aborted, "preferred_read_replica": -1,
            "records": bytes(records)}, partition


def _aborted_transactions(partition, fetch_offset: int, records) -> list[dict]:
    """The aborted transactions overlapping the offsets actually returned."""
    last_offset = last_offset_in(records)
    if last_offset is None:
        return []
    return [{"producer_id": producer_id, "first_offset": first_offset}
            for producer_id, first_offset in partition.log.aborted_transactions(fetch_offset, last_offset + 1)]
