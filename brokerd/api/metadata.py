"""Metadata: brokers, controller, and per partition the leader, replicas and ISR."""

from __future__ import annotations

from kafka.errors import KafkaError, LeaderNotAvailableError, UnknownTopicOrPartitionError

from brokerd.api.errors import error_code
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.state import TopicRecord
from brokerd.storage import validate_topic_name


async def handle(broker, request) -> dict:
    body = request.body
    version = request.header.api_version
    names = _requested_names(body, version, broker)
    allow_create = broker.config.get("auto.create.topics.enable") and (
        version < 4 or body.allow_auto_topic_creation)
    topics = [_describe_topic(broker, name, allow_create) for name in names]
    controller = broker.state.controller()
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.broker_id, "host": b.host, "port": b.port, "rack": None}
                    for b in broker.live_brokers],
        "cluster_id": broker.cluster_id,
        "controller_id": controller[0] if controller else -1,
        "topics": topics,
    }


def _requested_names(body, version: int, broker) -> list[str]:
    """v0 asks for every topic with an empty list, v1+ with a null list."""
    if body.topics is None or (version == 0 and not body.topics):
        return sorted(broker.topics)
    return [t.name for t in body.topics]


def _describe_topic(broker, name: str, allow_create: bool) -> dict:
    topic = broker.topics.get(name)
    if topic is None:
        try:
            topic = _auto_create(broker, name) if allow_create else None
        except KafkaError as exc:
            return _topic_error(name, exc)
        if topic is None:
            return _topic_error(name, UnknownTopicOrPartitionError())
    live = {b.broker_id for b in broker.live_brokers}
    return {
        "error_code": 0, "name": name, "is_internal": name == OFFSETS_TOPIC,
        "partitions": [_describe_partition(p, live) for p in topic.partitions.values()],
    }


def _describe_partition(record, live: set[int]) -> dict:
    leader_alive = record.leader in live
    return {
        "error_code": 0 if leader_alive else LeaderNotAvailableError.errno,
        "partition_index": record.partition,
        "leader_id": record.leader if leader_alive else -1,
        "leader_epoch": record.leader_epoch,
        "replica_nodes": record.replicas,
        "isr_nodes": record.isr,
        "offline_replicas": [r for r in record.replicas if r not in live],
    }


def _auto_create(broker, name: str) -> TopicRecord | None:
    validate_topic_name(name)
    topic = broker.auto_create_topic(name)
    if topic is None:
        raise LeaderNotAvailableError(f"topic {name} is being created")
    return topic


def _topic_error(name: str, exc: Exception) -> dict:
    return {"error_code": error_code(exc), "name": name, "is_internal": False, "partitions": []}


