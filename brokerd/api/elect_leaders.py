"""ElectLeaders: move leadership back to preferred replicas, or give a partition whose
in-sync replicas are all gone an out-of-sync leader (unclean election, v1+).

It needs ALTER on the cluster, as in Kafka; a refused request answers
CLUSTER_AUTHORIZATION_FAILED, and so does each partition it named."""

from __future__ import annotations

from kafka.admin import ACLOperation
from kafka.errors import InvalidRequestError

from brokerd.api.authorization import cluster_refusal
from brokerd.api.errors import error_code, partition_results
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices

ELECTION_TYPES = {0: "preferred", 1: "unclean"}


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    wanted = (
        None
        if body.topic_partitions is None
        else [(t.topic, p) for t in body.topic_partitions for p in t.partitions]
    )
    refused = cluster_refusal(services.security.authorizer, request.session, ACLOperation.ALTER)
    if refused is not None:
        return _response(refused, dict.fromkeys(wanted or (), refused))
    try:
        election = ELECTION_TYPES.get(getattr(body, "election_type", 0))
        if election is None:
            raise InvalidRequestError(f"unknown election type {body.election_type}")
        results = services.controller.elect_leaders(
            election, wanted, services.metadata.refresh_registrations()
        )
    except Exception as exc:
        return {"throttle_time_ms": 0, "error_code": error_code(exc), "replica_election_results": []}
    services.metadata.apply_metadata_delta()
    return _response(None, results)


def _response(error: Exception | None, results: dict) -> dict:
    by_topic = partition_results(results, "partition_id")
    return {
        "throttle_time_ms": 0,
        "error_code": 0 if error is None else error_code(error),
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()
        ],
    }
