"""CreateTopics, CreatePartitions and DeleteTopics, which clients send to the controller.

Permissions are those of Kafka's controller: creating needs CREATE on the cluster or else on
each topic, deleting DELETE on the cluster or else DESCRIBE and DELETE on each topic, adding
partitions ALTER on each topic; a refused topic answers TOPIC_AUTHORIZATION_FAILED. A topic the
client may not DESCRIBE answers so whether it exists or not.
"""

from __future__ import annotations

from kafka.admin import ACLOperation
from kafka.errors import (
    InvalidReplicationAssignmentError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)

from brokerd.api.authorization import Permission, allows_cluster, decided
from brokerd.api.errors import error_code, error_message

DEFAULT = -1


def _on_cluster_or_topics(broker, request, operation: ACLOperation) -> Permission:
    """The operation on the cluster covers every topic (tried without logging a denial, as
    Kafka does); otherwise each topic is checked."""
    if allows_cluster(broker, request, operation, audit=False):
        return decided(True)
    return Permission(broker, request, operation)


async def handle_create(broker, request) -> dict:
    body = request.body
    creatable = _on_cluster_or_topics(broker, request, ACLOperation.CREATE)
    results = [
        _create(broker, topic, body.validate_only, creatable.refusal(topic.name)) for topic in body.topics
    ]
    broker.refresh_metadata()
    return {"throttle_time_ms": 0, "topics": results}


def _create(broker, topic, validate_only: bool, refused: Exception | None) -> dict:
    if refused is not None:  # Kafka's controller answers with its own message
        return {
            "name": topic.name,
            "error_code": error_code(refused),
            "error_message": "Authorization failed.",
        }
    live = broker.refresh_registrations()
    try:
        configs = {c.name: c.value for c in topic.configs}
        partitions, replication = topic.num_partitions, topic.replication_factor
        assignment = _assignment(topic) if topic.assignments else None
        if assignment is not None and (partitions != DEFAULT or replication != DEFAULT):
            raise InvalidRequestError(
                "give either a replica assignment or numPartitions and replicationFactor (-1), not both"
            )
        if partitions == DEFAULT:
            partitions = broker.config.get("num.partitions")
        if replication == DEFAULT:
            replication = min(broker.config.get("default.replication.factor"), len(live))
        broker.controller.create_topic(
            topic.name,
            partitions,
            replication,
            configs,
            live,
            validate_only=validate_only,
            assignment=assignment,
        )
    except Exception as exc:
        return {"name": topic.name, "error_code": error_code(exc), "error_message": error_message(exc)}
    return {"name": topic.name, "error_code": 0, "error_message": None}


def _assignment(topic) -> list[list[int]]:
    """Replica lists by partition index, which must run 0..n-1 (Kafka's rule)."""
    by_index = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    if sorted(by_index) != list(range(len(topic.assignments))):
        raise InvalidReplicationAssignmentError(
            f"partition indexes {sorted(by_index)} of the assignment must be 0..n-1, each once"
        )
    return [by_index[p] for p in range(len(by_index))]


async def handle_create_partitions(broker, request) -> dict:
    body = request.body
    live = broker.refresh_registrations()
    alterable = Permission(broker, request, ACLOperation.ALTER)
    results = []
    for topic in body.topics:
        assignment = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
        try:
            alterable.require(topic.name)
            broker.controller.create_partitions(
                topic.name, topic.count, assignment, live, validate_only=body.validate_only
            )
            results.append({"name": topic.name, "error_code": 0, "error_message": None})
        except Exception as exc:
            results.append(
                {"name": topic.name, "error_code": error_code(exc), "error_message": error_message(exc)}
            )
    broker.refresh_metadata()
    return {"throttle_time_ms": 0, "results": results}


async def handle_delete(broker, request) -> dict:
    if allows_cluster(broker, request, ACLOperation.DELETE, audit=False):
        describable = deletable = decided(True)
    else:
        describable = Permission(broker, request, ACLOperation.DESCRIBE)
        deletable = Permission(broker, request, ACLOperation.DELETE)
    broker.refresh_metadata()
    results = []
    for name in request.body.topic_names:
        try:
            describable.require(name)
            if not deletable.allows(name):  # Kafka tells a describable topic is missing
                if name not in broker.topics:
                    raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
                deletable.require(name)
            broker.controller.delete_topic(name)
            results.append({"name": name, "error_code": 0})
        except Exception as exc:
            results.append({"name": name, "error_code": error_code(exc)})
    broker.refresh_metadata()
    return {"throttle_time_ms": 0, "responses": results}
