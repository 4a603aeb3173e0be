"""ListOffsets: earliest (-2), latest (-1) or the first offset at a time.

"Latest" and the newest offset found by time stop at the high watermark, or at the last
stable offset for read_committed clients (isolation level 1), as in Kafka.
"""

from __future__ import annotations

from brokerd.api.errors import error_code

LATEST = -1
EARLIEST = -2
READ_COMMITTED = 1


async def handle(broker, request) -> dict:
    read_committed = request.body.isolation_level == READ_COMMITTED
    topics = []
    for topic in request.body.topics:
        partitions = [_lookup(broker, topic.name, p.partition_index, p.timestamp,
                              p.current_leader_epoch, read_committed) for p in topic.partitions]
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _lookup(broker, topic: str, index: int, timestamp: int, current_leader_epoch: int,
            read_committed: bool) -> dict:
    try:
        partition = broker.replicas.get_leader(topic, index)
        partition.check_leader_epoch(current_leader_epoch)
        offset, found_ts = _resolve(partition, timestamp, read_committed)
    except Exception as exc:
        return {"partition_index": index, "error_code": error_code(exc),
                "timestamp": -1, "offset": -1, "leader_epoch": -1}
    return {"partition_index": index, "error_code": 0, "timestamp": found_ts,
            "offset": offset, "leader_epoch": partition.leader_epoch}


def _resolve(partition, timestamp: int, read_committed: bool) -> tuple[int, int]:
    fetchable = partition.last_stable_offset if read_committed else partition.high_watermark
    if timestamp == LATEST:
        return fetchable, -1
    if timestamp == EARLIEST:
        return partition.log.log_start_offset, -1
    found = partition.log.offset_for_timestamp(timestamp)
    if found is None or found.offset >= fetchable:
        return -1, -1  # Kafka's answer when no record is that recent
    return found.offset, found.timestamp
