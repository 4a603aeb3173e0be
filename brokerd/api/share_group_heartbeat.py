"""ShareGroupHeartbeat (KIP-932): a share group member joins (epoch 0), heartbeats and leaves
(-1) at the group's coordinator, which answers its member epoch and, when it changed, the
partitions assigned to it (by topic id). Needs READ on the group and DESCRIBE on every topic
it subscribes to (TOPIC_AUTHORIZATION_FAILED otherwise), as in Kafka."""

from __future__ import annotations

import uuid

from kafka.admin import ACLOperation

from brokerd.api.authorization import Permission, require_group
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.coordinator.share_group.assignor import Assignment
from brokerd.ports.services import BrokerServices


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        describable = Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
        for topic in body.subscribed_topic_names or ():
            refused = describable.refusal(topic)
            if refused is not None:
                raise refused
        result = services.groups.share_group_heartbeat(
            body.group_id,
            body.member_id,
            body.member_epoch,
            body.rack_id,
            None if body.subscribed_topic_names is None else list(body.subscribed_topic_names),
            request.header.client_id or "",
            request.client_host,
        )
    except Exception as exc:
        return {
            "throttle_time_ms": 0,
            "error_code": error_code(exc),
            "error_message": error_message(exc),
            "member_id": None,
            "member_epoch": 0,
            "heartbeat_interval_ms": 0,
            "assignment": None,
        }
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": None
        if result.assignment is None
        else assignment_by_topic_id(services, result.assignment),
    }


def assignment_by_topic_id(services: BrokerServices, assignment: Assignment) -> dict:
    """An assignment as ShareGroupHeartbeat carries it: by topic id."""
    return {
        "topic_partitions": [
            {
                "topic_id": uuid.UUID(hex=services.metadata.topics[topic].topic_id),
                "partitions": sorted(partitions),
            }
            for topic, partitions in sorted(assignment.items())
            if topic in services.metadata.topics
        ]
    }
