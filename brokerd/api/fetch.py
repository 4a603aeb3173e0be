"""Fetch: whole batches from the one holding the fetch offset, long-polled up to MaxWaitMs.

No fetch sessions (session id 0, every requested partition in every response), no aborted
transactions, records never null (librdkafka treats a null record set as a parse failure).
"""

from __future__ import annotations

import asyncio

from brokerd.api.errors import error_code
from brokerd.partition import wait_any


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
    """One pass over the requested partitions, within the response's max_bytes."""
    budget = body.max_bytes
    total = 0
    watched = []
    responses = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            # Kafka always returns at least one batch, but only to the first partition with data.
            limit = min(p.partition_max_bytes, budget) if total else p.partition_max_bytes
            result, partition = _read_partition(broker, body.replica_id, topic.topic, p, limit)
            size = len(result["records"])
            total += size
            budget = max(budget - size, 0)
            if partition is not None and size == 0:
                watched.append(partition)
            partitions.append(result)
        responses.append({"topic": topic.topic, "partitions": partitions})
    return responses, total, watched


def _read_partition(broker, replica_id: int, topic: str, request, max_bytes: int):
    """Consumers read up to the high watermark; a follower (replica_id >= 0) reads up to the
    log end, and its fetch offset tells the leader how far its log reaches."""
    index = request.partition
    try:
        partition = broker.replicas.get_leader(topic, index)
        partition.check_leader_epoch(request.current_leader_epoch)
        follower = replica_id >= 0
        if follower:
            partition.record_follower_fetch(replica_id, request.fetch_offset)
        records = (partition.read(request.fetch_offset, max_bytes, for_follower=follower)
                   if max_bytes > 0 else b"")
    except Exception as exc:
        return {"partition_index": index, "error_code": error_code(exc), "high_watermark": -1,
                "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                "preferred_read_replica": -1, "records": b""}, None
    return {"partition_index": index, "error_code": 0,
            "high_watermark": partition.high_watermark,
            "last_stable_offset": partition.high_watermark,
            "log_start_offset": partition.log.log_start_offset,
            "aborted_transactions": None, "preferred_read_replica": -1,
            "records": bytes(records)}, partition

