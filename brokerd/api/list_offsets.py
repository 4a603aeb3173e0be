"""ListOffsets: earliest (-2), latest (-1), the record with the largest timestamp (-3, v7+,
KIP-734) or the first offset at a time.

"Latest" and the newest offset found by time stop at the high watermark, or at the last
stable offset for read_committed clients (isolation level 1), as in Kafka. A leader whose
high watermark has not yet caught up with its leader epoch answers those two
OFFSET_NOT_AVAILABLE, which clients retry (KIP-207). A topic the client may not DESCRIBE
answers TOPIC_AUTHORIZATION_FAILED for each of its partitions.
"""

from __future__ import annotations

from kafka.admin import ACLOperation
from kafka.errors import UnsupportedVersionError

from brokerd.api.authorization import Permission
from brokerd.api.errors import error_code
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.replica_manager import ReplicaManager

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
MAX_TIMESTAMP_VERSION = 7
READ_COMMITTED = 1


async def handle(services: BrokerServices, request: Request) -> dict:
    read_committed = request.body.isolation_level == READ_COMMITTED
    version = request.header.api_version
    describable = Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    topics = []
    for topic in request.body.topics:
        partitions = [
            _lookup(
                services.replicas,
                topic.name,
                p.partition_index,
                p.timestamp,
                p.current_leader_epoch,
                read_committed,
                version,
                describable,
            )
            for p in topic.partitions
        ]
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _lookup(
    replicas: ReplicaManager,
    topic: str,
    index: int,
    timestamp: int,
    current_leader_epoch: int,
    read_committed: bool,
    version: int,
    describable: Permission,
) -> dict:
    try:
        describable.require(topic)
        if timestamp == MAX_TIMESTAMP and version < MAX_TIMESTAMP_VERSION:
            raise UnsupportedVersionError(f"MAX_TIMESTAMP (-3) needs ListOffsets v{MAX_TIMESTAMP_VERSION}")
        partition = replicas.get_leader(topic, index)
        partition.check_leader_epoch(current_leader_epoch)
        offset, found_ts = _resolve(partition, timestamp, read_committed)
    except Exception as exc:
        return {
            "partition_index": index,
            "error_code": error_code(exc),
            "timestamp": -1,
            "offset": -1,
            "leader_epoch": -1,
        }
    return {
        "partition_index": index,
        "error_code": 0,
        "timestamp": found_ts,
        "offset": offset,
        "leader_epoch": partition.leader_epoch,
    }


def _resolve(partition, timestamp: int, read_committed: bool) -> tuple[int, int]:
    fetchable = partition.last_stable_offset if read_committed else partition.high_watermark
    if timestamp == EARLIEST:
        return partition.log.log_start_offset, -1
    if timestamp == LATEST:
        partition.check_high_watermark_caught_up()
        return fetchable, -1
    if timestamp == MAX_TIMESTAMP:
        found = partition.log.offset_of_max_timestamp()
    else:
        found = partition.log.offset_for_timestamp(timestamp)
    if found is None or found.offset >= fetchable:
        partition.check_high_watermark_caught_up()  # the record may be committed already
        return -1, -1  # Kafka's answer when no record is that recent
    return found.offset, found.timestamp
