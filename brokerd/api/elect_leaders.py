"""ElectLeaders: move leadership back to preferred replicas (Kafka's preferred election only)."""

from __future__ import annotations

from kafka.errors import InvalidRequestError

from brokerd.api.errors import error_code, partition_results

PREFERRED = 0


async def handle(broker, request) -> dict:
    body = request.body
    wanted = None if body.topic_partitions is None else [
        (t.topic, p) for t in body.topic_partitions for p in t.partitions]
    try:
        if getattr(body, "election_type", PREFERRED) != PREFERRED:
            raise InvalidRequestError("only preferred leader election is offered; unclean "
                                      "election follows unclean.leader.election.enable")
        results = broker.controller.elect_preferred_leaders(
            wanted, broker.refresh_registrations())
    except Exception as exc:
        return {"throttle_time_ms": 0, "error_code": error_code(exc),
                "replica_election_results": []}
    broker.refresh_metadata()
    by_topic = partition_results(results, "partition_id")
    return {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": [
        {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()]}
