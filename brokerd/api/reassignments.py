"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455): move replicas between
brokers. The procedure itself is brokerd.reassignment, carried out by the controller.

As in Kafka, altering needs ALTER on the cluster and listing DESCRIBE on it; a refused request
answers CLUSTER_AUTHORIZATION_FAILED (altering, for each partition it named too)."""

from __future__ import annotations

from kafka.admin import ACLOperation

from brokerd import reassignment
from brokerd.api.authorization import cluster_refusal
from brokerd.api.errors import error_code, error_message, partition_results
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices


async def handle_alter(services: BrokerServices, request: Request) -> dict:
    body = request.body
    targets = {
        (t.name, p.partition_index): None if p.replicas is None else list(p.replicas)
        for t in body.topics
        for p in t.partitions
    }
    refused = cluster_refusal(services.security.authorizer, request.session, ACLOperation.ALTER)
    if refused is not None:
        return _alter_response(refused, dict.fromkeys(targets, refused))
    try:
        results = services.controller.reassign_partitions(targets, services.metadata.refresh_registrations())
    except Exception as exc:
        return _alter_response(exc, {})
    services.metadata.apply_metadata_delta()
    return _alter_response(None, results)


def _alter_response(error: Exception | None, results: dict) -> dict:
    by_topic = partition_results(results, "partition_index")
    return {
        "throttle_time_ms": 0,
        "error_code": 0 if error is None else error_code(error),
        "error_message": None if error is None else error_message(error),
        "responses": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


async def handle_list(services: BrokerServices, request: Request) -> dict:
    """Ongoing reassignments, of every topic or of the partitions asked about."""
    body = request.body
    refused = cluster_refusal(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    if refused is not None:
        return {
            "throttle_time_ms": 0,
            "error_code": error_code(refused),
            "error_message": error_message(refused),
            "topics": [],
        }
    wanted = None if body.topics is None else {(t.name, p) for t in body.topics for p in t.partition_indexes}
    topics = []
    for topic in services.metadata.topics.values():
        partitions = [
            {
                "partition_index": p,
                "replicas": r.replicas,
                "adding_replicas": r.adding_replicas,
                "removing_replicas": r.removing_replicas,
            }
            for p, r in sorted(topic.partitions.items())
            if reassignment.is_reassigning(r) and (wanted is None or (topic.name, p) in wanted)
        ]
        if partitions:
            topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": topics}
