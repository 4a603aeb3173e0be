"""ShareGroupDescribe (KIP-932): a share group's state, epochs and members with their
subscriptions and assignments. Needs DESCRIBE on each group; an id that is not a share group
answers GROUP_ID_NOT_FOUND, as Kafka does."""

from __future__ import annotations

import uuid

from kafka.admin import ACLOperation
from kafka.errors import GroupIdNotFoundError

from brokerd.api.authorization import require_group
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.coordinator.share_group.assignor import Assignment
from brokerd.ports.services import BrokerServices

ASSIGNOR = "simple"
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


async def handle(services: BrokerServices, request: Request) -> dict:
    return {
        "throttle_time_ms": 0,
        "groups": [_describe(services, request, g) for g in request.body.group_ids],
    }


def _describe(services: BrokerServices, request: Request, group_id: str) -> dict:
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.DESCRIBE, group_id)
        group = services.groups.share_group_describe(group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
    except Exception as exc:
        return {
            "error_code": error_code(exc),
            "error_message": error_message(exc),
            "group_id": group_id,
            "group_state": "Dead",
            "group_epoch": -1,
            "assignment_epoch": -1,
            "assignor_name": "",
            "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }
    return {
        "error_code": 0,
        "error_message": None,
        "group_id": group_id,
        "group_state": group.state.value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": ASSIGNOR,
        "members": [
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": f"/{m.client_host}",
                "subscribed_topic_names": sorted(m.subscribed_topics),
                "assignment": _assignment(services, m.assignment),
            }
            for m in group.members.values()
        ],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _assignment(services: BrokerServices, assignment: Assignment) -> dict:
    """A member's assignment as ShareGroupDescribe answers it: each topic by id and, as
    Kafka fills it in, by name."""
    return {
        "topic_partitions": [
            {
                "topic_id": uuid.UUID(hex=services.metadata.topics[topic].topic_id),
                "topic_name": topic,
                "partitions": sorted(partitions),
            }
            for topic, partitions in sorted(assignment.items())
            if topic in services.metadata.topics
        ]
    }
