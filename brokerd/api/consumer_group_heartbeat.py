"""ConsumerGroupHeartbeat (KIP-848, api key 68): a consumer with ``group.protocol=consumer``
joins, stays in and leaves its group, and learns its assignment, with this one request.

As in Kafka, the member needs READ on the group and DESCRIBE on every topic it subscribes to
by name; the state machine is brokerd/coordinator/consumer_group/coordinator.py.
"""

from __future__ import annotations

from kafka.admin import ACLOperation
from kafka.errors import InvalidRequestError

from brokerd.api.authorization import Permission, require_group
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.coordinator.consumer_group.heartbeat import Heartbeat
from brokerd.coordinator.consumer_group.model import assignment_from, wire_assignment
from brokerd.ports.services import BrokerServices

MAX_SUBSCRIBED_TOPICS = 100_000  # a bound on what one request may make us hold


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        names = body.subscribed_topic_names
        owned = body.topic_partitions
        if (names is not None and len(names) > MAX_SUBSCRIBED_TOPICS) or (
            owned is not None and len(owned) > MAX_SUBSCRIBED_TOPICS
        ):
            raise InvalidRequestError("Too many topics in the request.")
        if names:
            describable = Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
            for name in names:
                describable.require(name)
        result = await services.groups.consumer_group_heartbeat(
            Heartbeat(
                group_id=body.group_id,
                member_id=body.member_id,
                member_epoch=body.member_epoch,
                instance_id=body.instance_id,
                rack_id=body.rack_id,
                rebalance_timeout_ms=body.rebalance_timeout_ms,
                subscribed_topic_names=None if names is None else list(names),
                subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
                server_assignor=body.server_assignor,
                owned=None if owned is None else assignment_from((t.topic_id, t.partitions) for t in owned),
                client_id=request.header.client_id or "",
                client_host=request.client_host,
                version=request.header.api_version,
            )
        )
    except Exception as exc:
        return {
            "throttle_time_ms": 0,
            "error_code": error_code(exc),
            "error_message": error_message(exc),
            "member_epoch": 0,
            "heartbeat_interval_ms": 0,
        }
    assignment = None
    if result.assignment is not None:
        assignment = {"topic_partitions": wire_assignment(result.assignment)}
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": assignment,
    }
