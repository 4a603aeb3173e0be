"""DescribeClientQuotas and AlterClientQuotas (KIP-546), and the quota check of Produce and
Fetch (KIP-13, KIP-219).

Describing needs DESCRIBE_CONFIGS on the cluster, altering ALTER_CONFIGS on it, as in Kafka.
An entity is a list of (type, name) with a null name for `<default>`; errors and their
messages are Kafka's (INVALID_REQUEST for an unknown entity type or key, a bad value, a
filter naming a type twice).

Produce and Fetch answers carry `throttle_time_ms` when the client went over its byte rate
(brokerd.quotas); the server then waits that long before reading the connection's next
request. Produce is counted by its record batches after the append (the records are accepted),
Fetch by the bytes of records it answers; followers (replica_id >= 0) are never throttled.
"""

from __future__ import annotations

from kafka.admin import ACLOperation
from kafka.errors import ClusterAuthorizationFailedError, InvalidRequestError

from brokerd.api.authorization import allows_cluster
from brokerd.api.request import Handler, Request
from brokerd.ports.services import BrokerServices
from brokerd.quotas import ENTITY_TYPES, ClientQuotas, QuotaEntityError, validate

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
CLUSTER_DENIED = "Cluster authorization failed."


def _entity_fields(entity: dict[str, str | None]) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in sorted(entity.items())]


async def handle_describe(services: BrokerServices, request: Request) -> dict:
    def answer(error: int = 0, message: str | None = None, entries=None) -> dict:
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message, "entries": entries}

    if not allows_cluster(services.security.authorizer, request.session, ACLOperation.DESCRIBE_CONFIGS):
        return answer(ClusterAuthorizationFailedError.errno, CLUSTER_DENIED)
    try:
        matches = _filter(request.body.components, request.body.strict)
    except QuotaEntityError as exc:
        return answer(InvalidRequestError.errno, str(exc))
    entries = [
        {
            "entity": _entity_fields(e["entity"]),
            "values": [{"key": k, "value": float(v)} for k, v in sorted(e["values"].items())],
        }
        for e in services.quotas.client_quotas()
        if e["values"] and matches(e["entity"])
    ]
    return answer(entries=entries)


def _filter(components, strict: bool):
    """Kafka's ClientQuotaFilter: each component matches one entity type exactly, its
    default, or any name; strict leaves out entities naming other types too."""
    wanted: dict[str, tuple[int, str | None]] = {}
    for c in components:
        if c.entity_type in wanted:
            raise QuotaEntityError(f"Duplicate {c.entity_type} filter component entity type")
        if c.entity_type not in ENTITY_TYPES:
            raise QuotaEntityError(f"Custom entity type '{c.entity_type}' not supported")
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise QuotaEntityError(f"Unknown match type {c.match_type}")
        if c.match_type == MATCH_EXACT and c.match is None:
            raise QuotaEntityError(f"Exact match of {c.entity_type} needs a name")
        wanted[c.entity_type] = (c.match_type, c.match)

    def matches(entity: dict[str, str | None]) -> bool:
        if strict and set(entity) - set(wanted):
            return False
        for entity_type, (match_type, name) in wanted.items():
            if entity_type not in entity:
                return False
            if match_type == MATCH_EXACT and entity[entity_type] != name:
                return False
            if match_type == MATCH_DEFAULT and entity[entity_type] is not None:
                return False
        return True

    return matches


async def handle_alter(services: BrokerServices, request: Request) -> dict:
    body = request.body
    allowed = allows_cluster(services.security.authorizer, request.session, ACLOperation.ALTER_CONFIGS)
    results, changes = [], []
    for entry in body.entries:
        entity = {e.entity_type: e.entity_name for e in entry.entity}
        fields = _entity_fields(entity)
        if not allowed:
            results.append(
                {
                    "error_code": ClusterAuthorizationFailedError.errno,
                    "error_message": CLUSTER_DENIED,
                    "entity": fields,
                }
            )
            continue
        try:
            if len(entity) != len(entry.entity):
                duplicate = next(t for t in entity if sum(e.entity_type == t for e in entry.entity) > 1)
                raise QuotaEntityError(f"Invalid client quota entity, duplicate entity entry {duplicate}")
            validate(entity, [(op.key, op.value, op.remove) for op in entry.ops])
        except QuotaEntityError as exc:
            results.append(
                {"error_code": InvalidRequestError.errno, "error_message": str(exc), "entity": fields}
            )
            continue
        changes.append((entity, entry.ops))
        results.append({"error_code": 0, "error_message": None, "entity": fields})
    if changes and not body.validate_only:
        with services.quotas.update_client_quotas() as stored:
            for entity, ops in changes:
                _apply(stored, entity, ops)
    return {"throttle_time_ms": 0, "entries": results}


def _apply(stored: list[dict], entity: dict[str, str | None], ops) -> None:
    existing = next((e for e in stored if e["entity"] == entity), None)
    if existing is None:
        existing = {"entity": entity, "values": {}}
        stored.append(existing)
    for op in ops:
        if op.remove:
            existing["values"].pop(op.key, None)
        else:
            existing["values"][op.key] = float(op.value)
    if not existing["values"]:
        stored.remove(existing)


# -- enforcement ---------------------------------------------------------------------------
def _user(request: Request) -> str:
    return request.session.principal.name


def throttled_produce(handler: Handler, quotas: ClientQuotas) -> Handler:
    """Produce, counted after the append by the size of its record batches."""

    async def handle(services: BrokerServices, request: Request) -> dict | None:
        response = await handler(services, request)
        quotas.refresh()
        if quotas.produce.active and response is not None:
            size = sum(len(p.records or b"") for t in request.body.topic_data for p in t.partition_data)
            throttle = quotas.produce.record(_user(request), request.header.client_id, size)
            if throttle:
                response["throttle_time_ms"] = throttle
        return response

    return handle


def throttled_fetch(handler: Handler, quotas: ClientQuotas) -> Handler:
    """Fetch, counted by the record bytes of the answer; followers are never throttled."""

    async def handle(services: BrokerServices, request: Request) -> dict | None:
        response = await handler(services, request)
        quotas.refresh()
        if response is not None and quotas.fetch.active and request.body.replica_id < 0:
            size = sum(len(p["records"] or b"") for t in response["responses"] for p in t["partitions"])
            throttle = quotas.fetch.record(_user(request), request.header.client_id, size)
            if throttle:
                response["throttle_time_ms"] = throttle
        return response

    return handle
