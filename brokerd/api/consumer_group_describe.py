"""ConsumerGroupDescribe (KIP-848, api key 69): a consumer group's epochs, assignor and
members, each with its epoch, subscription, current and target assignment.

Each group needs DESCRIBE on it (else GROUP_AUTHORIZATION_FAILED for that group); a group
that is not a consumer group answers GROUP_ID_NOT_FOUND, and clients then ask DescribeGroups,
as with Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kafka.admin import ACLOperation, ResourceType

from brokerd.api.authorization import require_group
from brokerd.api.authorized_operations import authorized_operations
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.coordinator.consumer_group.model import Assignment, ConsumerGroup, ConsumerGroupMember
from brokerd.ports.services import BrokerServices

CONSUMER_MEMBER_TYPE = 1  # v1 (KIP-1099): 0 a classic-protocol member, 1 a consumer one


async def handle(services: BrokerServices, request: Request) -> dict:
    asks_operations = request.body.include_authorized_operations
    names = {uuid.UUID(hex=record.topic_id): name for name, record in services.metadata.topics.items()}
    groups = []
    for group_id in request.body.group_ids:
        try:
            require_group(services.security.authorizer, request.session, ACLOperation.DESCRIBE, group_id)
            group, assignor = services.groups.consumer_group_describe(group_id)
        except Exception as exc:
            groups.append(
                {"group_id": group_id, "error_code": error_code(exc), "error_message": error_message(exc)}
            )
            continue
        described = _describe(group, assignor, names, request.header.api_version)
        described["authorized_operations"] = authorized_operations(
            services.security.authorizer, request.session, asks_operations, ResourceType.GROUP, group_id
        )
        groups.append(described)
    return {"throttle_time_ms": 0, "groups": groups}


def _describe(group: ConsumerGroup, assignor: str, names: Mapping[uuid.UUID, str], version: int) -> dict:
    return {
        "error_code": 0,
        "group_id": group.group_id,
        "group_state": group.state().value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": assignor,
        "members": [
            _member(m, group.target.get(m.member_id, {}), names, version) for m in group.members.values()
        ],
    }


def _member(
    member: ConsumerGroupMember, target: Assignment, names: Mapping[uuid.UUID, str], version: int
) -> dict:
    described = {
        "member_id": member.member_id,
        "instance_id": member.instance_id,
        "rack_id": member.rack_id,
        "member_epoch": member.member_epoch,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "subscribed_topic_names": member.subscribed_topic_names,
        "subscribed_topic_regex": member.subscribed_topic_regex,
        "assignment": {"topic_partitions": _named(member.assigned, names)},
        "target_assignment": {"topic_partitions": _named(target, names)},
    }
    if version >= 1:
        described["member_type"] = CONSUMER_MEMBER_TYPE
    return described


def _named(assignment: Assignment, names: Mapping[uuid.UUID, str]) -> list[dict]:
    return [
        {"topic_id": topic_id, "topic_name": names.get(topic_id, ""), "partitions": sorted(partitions)}
        for topic_id, partitions in sorted(assignment.items(), key=lambda item: str(item[0]))
    ]
