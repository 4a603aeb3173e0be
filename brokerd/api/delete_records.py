"""DeleteRecords: the partition leader moves the log start offset up, as Kafka's does.

Records below the new log start are unreadable at once and go from disk with the segments
wholly below it. The answer waits until every in-sync follower has the new log start too
(followers learn it from Fetch responses and report it in their next Fetch request), or
until the request's timeout (REQUEST_TIMED_OUT). A topic the client may not DELETE answers
TOPIC_AUTHORIZATION_FAILED for each of its partitions, as in Kafka.
"""

from __future__ import annotations

import asyncio

from kafka.admin import ACLOperation

from brokerd.api.authorization import Permission
from brokerd.api.errors import error_code
from brokerd.api.request import Request
from brokerd.partition import Partition
from brokerd.ports.services import BrokerServices
from brokerd.replica_manager import ReplicaManager


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    timeout_s = max(body.timeout_ms, 0) / 1000
    topics = []
    pending = []
    deletable = Permission(services.security.authorizer, request.session, ACLOperation.DELETE)
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            result, partition = _delete(services.replicas, topic.name, p.partition_index, p.offset, deletable)
            partitions.append(result)
            if partition is not None:
                pending.append(_await_followers(result, partition, timeout_s))
        topics.append({"name": topic.name, "partitions": partitions})
    await asyncio.gather(*pending)
    return {"throttle_time_ms": 0, "topics": topics}


def _delete(
    replicas: ReplicaManager, topic: str, index: int, offset: int, deletable: Permission
) -> tuple[dict, Partition | None]:
    """Apply one partition's deletion on the leader; returns (response entry, partition)."""
    try:
        deletable.require(topic)
        partition = replicas.get_leader(topic, index)
        low_watermark = partition.delete_records_before(offset)
    except Exception as exc:
        return {"partition_index": index, "low_watermark": -1, "error_code": error_code(exc)}, None
    return {"partition_index": index, "low_watermark": low_watermark, "error_code": 0}, partition


async def _await_followers(result: dict, partition: Partition, timeout_s: float) -> None:
    try:
        await partition.wait_for_log_start(result["low_watermark"], timeout_s)
    except Exception as exc:
        result.update(low_watermark=-1, error_code=error_code(exc))
