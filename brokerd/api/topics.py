"""CreateTopics, CreatePartitions and DeleteTopics, which clients send to the controller.

Permissions are those of Kafka's controller: creating needs CREATE on the cluster or else on
each topic, deleting DELETE on the cluster or else DESCRIBE and DELETE on each topic, adding
partitions ALTER on each topic; a refused topic answers TOPIC_AUTHORIZATION_FAILED. A topic the
client may not DESCRIBE answers so whether it exists or not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kafka.admin import ACLOperation
from kafka.errors import (
    InvalidReplicationAssignmentError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)

from brokerd.api.authorization import Permission, allows_cluster, decided
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.security.principal import Session
from brokerd.security.standard_authorizer import StandardAuthorizer

DEFAULT = -1


def _on_cluster_or_topics(
    authorizer: StandardAuthorizer, session: Session, operation: ACLOperation
) -> Permission:
    """The operation on the cluster covers every topic (tried without logging a denial, as
    Kafka does); otherwise each topic is checked."""
    if allows_cluster(authorizer, session, operation, audit=False):
        return decided(True)
    return Permission(authorizer, session, operation)


def _duplicates(names: Iterable[str]) -> set[str]:
    """Topic names a request gives more than once: Kafka's controller answers each of them
    once with INVALID_REQUEST and acts on none of their entries."""
    return {name for name, count in Counter(names).items() if count > 1}


def _duplicate_result(name: str) -> dict:
    return {"name": name, "error_code": InvalidRequestError.errno, "error_message": "Duplicate topic name."}


async def handle_create(services: BrokerServices, request: Request) -> dict:
    body = request.body
    duplicates = _duplicates(topic.name for topic in body.topics)
    creatable = _on_cluster_or_topics(services.security.authorizer, request.session, ACLOperation.CREATE)
    results = [
        _create(services, topic, body.validate_only, creatable.refusal(topic.name))
        for topic in body.topics
        if topic.name not in duplicates
    ]
    results += [_duplicate_result(name) for name in sorted(duplicates)]
    services.metadata.apply_metadata_delta()
    return {"throttle_time_ms": 0, "topics": results}


def _create(services: BrokerServices, topic, validate_only: bool, refused: Exception | None) -> dict:
    if refused is not None:  # Kafka's controller answers with its own message
        return {
            "name": topic.name,
            "error_code": error_code(refused),
            "error_message": "Authorization failed.",
        }
    live = services.metadata.refresh_registrations()
    try:
        configs = {c.name: c.value for c in topic.configs}
        partitions, replication = topic.num_partitions, topic.replication_factor
        assignment = _assignment(topic) if topic.assignments else None
        if assignment is not None and (partitions != DEFAULT or replication != DEFAULT):
            raise InvalidRequestError(
                "give either a replica assignment or numPartitions and replicationFactor (-1), not both"
            )
        if partitions == DEFAULT:
            partitions = services.config.get("num.partitions")
        if replication == DEFAULT:
            replication = min(services.config.get("default.replication.factor"), len(live))
        services.controller.create_topic(
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


async def handle_create_partitions(services: BrokerServices, request: Request) -> dict:
    body = request.body
    live = services.metadata.refresh_registrations()
    alterable = Permission(services.security.authorizer, request.session, ACLOperation.ALTER)
    duplicates = _duplicates(topic.name for topic in body.topics)
    results = [_duplicate_result(name) for name in sorted(duplicates)]
    for topic in body.topics:
        if topic.name in duplicates:
            continue
        assignment = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
        try:
            alterable.require(topic.name)
            services.controller.create_partitions(
                topic.name, topic.count, assignment, live, validate_only=body.validate_only
            )
            results.append({"name": topic.name, "error_code": 0, "error_message": None})
        except Exception as exc:
            results.append(
                {"name": topic.name, "error_code": error_code(exc), "error_message": error_message(exc)}
            )
    services.metadata.apply_metadata_delta()
    return {"throttle_time_ms": 0, "results": results}


async def handle_delete(services: BrokerServices, request: Request) -> dict:
    if allows_cluster(services.security.authorizer, request.session, ACLOperation.DELETE, audit=False):
        describable = deletable = decided(True)
    else:
        describable = Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
        deletable = Permission(services.security.authorizer, request.session, ACLOperation.DELETE)
    services.metadata.apply_metadata_delta()
    results = []
    for name in request.body.topic_names:
        try:
            describable.require(name)
            if not deletable.allows(name):  # Kafka tells a describable topic is missing
                if name not in services.metadata.topics:
                    raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
                deletable.require(name)
            services.controller.delete_topic(name)
            results.append({"name": name, "error_code": 0})
        except Exception as exc:
            results.append({"name": name, "error_code": error_code(exc)})
    services.metadata.apply_metadata_delta()
    return {"throttle_time_ms": 0, "responses": results}
