"""OffsetForLeaderEpoch: where a leader epoch ended on the leader (KIP-101, KIP-279).

Followers ask it before fetching, to find where their log diverged from the leader's and
truncate there; consumers ask it to validate their position after a leader change.

As in Kafka, CLUSTER_ACTION on the cluster (a follower's) answers every topic; without it each
topic needs DESCRIBE, else its partitions answer TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from kafka.admin import ACLOperation

from brokerd.api.authorization import Permission, allows_cluster, decided
from brokerd.api.errors import error_code


async def handle(broker, request) -> dict:
    describable = (
        decided(True)
        if allows_cluster(broker, request, ACLOperation.CLUSTER_ACTION, audit=False)
        else Permission(broker, request, ACLOperation.DESCRIBE)
    )
    topics = []
    for topic in request.body.topics:
        partitions = [_end_offset(broker, topic.topic, p, describable) for p in topic.partitions]
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _end_offset(broker, topic: str, request, describable: Permission) -> dict:
    try:
        describable.require(topic)
        partition = broker.replicas.get_leader(topic, request.partition)
        partition.check_leader_epoch(request.current_leader_epoch)
        epoch, end_offset = partition.log.end_offset_for_epoch(request.leader_epoch)
    except Exception as exc:
        return {
            "error_code": error_code(exc),
            "partition": request.partition,
            "leader_epoch": -1,
            "end_offset": -1,
        }
    return {"error_code": 0, "partition": request.partition, "leader_epoch": epoch, "end_offset": end_offset}
