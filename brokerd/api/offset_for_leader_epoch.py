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
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.replica_manager import ReplicaManager


async def handle(services: BrokerServices, request: Request) -> dict:
    describable = (
        decided(True)
        if allows_cluster(
            services.security.authorizer, request.session, ACLOperation.CLUSTER_ACTION, audit=False
        )
        else Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    )
    topics = []
    for topic in request.body.topics:
        partitions = [_end_offset(services.replicas, topic.topic, p, describable) for p in topic.partitions]
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _end_offset(replicas: ReplicaManager, topic: str, wanted, describable: Permission) -> dict:
    try:
        describable.require(topic)
        partition = replicas.get_leader(topic, wanted.partition)
        partition.check_leader_epoch(wanted.current_leader_epoch)
        epoch, end_offset = partition.log.end_offset_for_epoch(wanted.leader_epoch)
    except Exception as exc:
        return {
            "error_code": error_code(exc),
            "partition": wanted.partition,
            "leader_epoch": -1,
            "end_offset": -1,
        }
    return {"error_code": 0, "partition": wanted.partition, "leader_epoch": epoch, "end_offset": end_offset}
