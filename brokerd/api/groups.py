"""Consumer group membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the admin
APIs ListGroups, DescribeGroups and DeleteGroups. The state machine is in brokerd.coordinator.

Permissions are Kafka's: joining, syncing, heartbeating and leaving need READ on the group
(else GROUP_AUTHORIZATION_FAILED); DescribeGroups DESCRIBE and DeleteGroups DELETE on each
group; ListGroups lists every group to a client that may DESCRIBE the cluster, else only the
groups it may DESCRIBE.
"""

from __future__ import annotations

from kafka.admin import ACLOperation, ResourceType

from brokerd.api.authorization import Permission, allows_cluster, decided, require_group
from brokerd.api.authorized_operations import authorized_operations
from brokerd.api.errors import error_code
from brokerd.api.request import Request
from brokerd.coordinator.classic_group import Member
from brokerd.coordinator.classic_group_coordinator import join_error
from brokerd.coordinator.share_group.share_group import SHARE_PROTOCOL_TYPE, ShareGroup
from brokerd.ports.services import BrokerServices

# KIP-394: from JoinGroup v4 a new dynamic member must come back with a member id
FIRST_JOIN_VERSION_REQUIRING_MEMBER_ID = 4
# KIP-345: from LeaveGroup v3 a request lists members (member id, group instance id)
FIRST_LEAVE_VERSION_WITH_MEMBERS = 3


async def handle_join(services: BrokerServices, request: Request) -> dict:
    body = request.body
    candidate = Member(
        body.member_id,
        body.group_instance_id,
        request.header.client_id or "",
        request.client_host,
        body.session_timeout_ms,
        body.rebalance_timeout_ms if body.rebalance_timeout_ms > 0 else body.session_timeout_ms,
        body.protocol_type,
        [(p.name, p.metadata) for p in body.protocols],
    )
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        return await services.groups.join(
            body.group_id, candidate, request.header.api_version >= FIRST_JOIN_VERSION_REQUIRING_MEMBER_ID
        )
    except Exception as exc:
        return join_error(error_code(exc), body.member_id)


async def handle_sync(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        assignment = await services.groups.sync(
            body.group_id,
            body.member_id,
            body.group_instance_id,
            body.generation_id,
            {a.member_id: a.assignment for a in body.assignments},
        )
    except Exception as exc:
        return {"error_code": error_code(exc), "assignment": b""}
    return {"error_code": 0, "assignment": assignment}


async def handle_heartbeat(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        services.groups.heartbeat(body.group_id, body.member_id, body.group_instance_id, body.generation_id)
    except Exception as exc:
        return {"error_code": error_code(exc)}
    return {"error_code": 0}


async def handle_leave(services: BrokerServices, request: Request) -> dict:
    """v0-2 name one member and answer with its error; v3+ name several (by member id, or
    by group instance id alone) and answer each."""
    body = request.body
    batched = request.header.api_version >= FIRST_LEAVE_VERSION_WITH_MEMBERS
    members: list[tuple[str, str | None]] = (
        [(m.member_id, m.group_instance_id) for m in body.members] if batched else [(body.member_id, None)]
    )
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        outcomes = services.groups.leave(body.group_id, members)
    except Exception as exc:
        return {"error_code": error_code(exc), "members": []}
    codes = [0 if error is None else error_code(error) for error in outcomes]
    if not batched:
        return {"error_code": codes[0]}
    return {
        "error_code": 0,
        "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
            for (member_id, instance_id), code in zip(members, codes)
        ],
    }


async def handle_list(services: BrokerServices, request: Request) -> dict:
    """Groups coordinated here, filtered by state (v4+) and type (v5+: "classic" or, for a
    KIP-848 group, "consumer"; a KIP-932 share group is "share", its protocol type too).
    Filters match case-insensitively, as Kafka's do."""
    states = {s.lower() for s in getattr(request.body, "states_filter", None) or ()}
    types = {t.lower() for t in getattr(request.body, "types_filter", None) or ()}
    # Kafka filters silently: no denial is logged for a group left out
    describable = (
        decided(True)
        if allows_cluster(services.security.authorizer, request.session, ACLOperation.DESCRIBE, audit=False)
        else Permission(
            services.security.authorizer,
            request.session,
            ACLOperation.DESCRIBE,
            ResourceType.GROUP,
            audit=False,
        )
    )
    return {
        "error_code": 0,
        "groups": [
            {"group_id": g, "protocol_type": t, "group_state": s, "group_type": k}
            for g, t, s, k in services.groups.list_groups()
            if (not states or s.lower() in states) and (not types or k in types) and describable.allows(g)
        ],
    }


async def handle_describe(services: BrokerServices, request: Request) -> dict:
    """A group the client may not DESCRIBE answers GROUP_AUTHORIZATION_FAILED; the operations
    (v3+) are answered for the groups described without an error, as Kafka does."""
    asks_operations = getattr(request.body, "include_authorized_operations", False)
    groups = []
    for group_id in request.body.groups:
        described = _describe(services, request, group_id)
        described["authorized_operations"] = authorized_operations(
            services.security.authorizer,
            request.session,
            asks_operations and described["error_code"] == 0,
            ResourceType.GROUP,
            group_id,
        )
        groups.append(described)
    return {"groups": groups}


def _describe(services: BrokerServices, request: Request, group_id: str) -> dict:
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.DESCRIBE, group_id)
        group = services.groups.describe(group_id)
        if isinstance(group, ShareGroup):
            return _describe_share_group(group)
    except Exception as exc:
        return {
            "error_code": error_code(exc),
            "group_id": group_id,
            "group_state": "",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
        }
    return {
        "error_code": 0,
        "group_id": group_id,
        "group_state": group.state.value,
        "protocol_type": group.protocol_type or "",
        "protocol_data": group.protocol_name or "",
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": f"/{m.client_host}",
                "member_metadata": m.metadata_for(group.protocol_name) if group.protocol_name else b"",
                "member_assignment": m.assignment,
            }
            for m in group.members.values()
        ],
    }


def _describe_share_group(group: ShareGroup) -> dict:
    """A KIP-932 share group as DescribeGroups shows it: protocol type "share", its state and
    members (their assignments are ShareGroupDescribe's to tell)."""
    return {
        "error_code": 0,
        "group_id": group.group_id,
        "group_state": group.state.value,
        "protocol_type": SHARE_PROTOCOL_TYPE,
        "protocol_data": "",
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": None,
                "client_id": m.client_id,
                "client_host": f"/{m.client_host}",
                "member_metadata": b"",
                "member_assignment": b"",
            }
            for m in group.members.values()
        ],
    }


async def handle_delete(services: BrokerServices, request: Request) -> dict:
    results = []
    for group_id in request.body.groups_names:
        try:
            require_group(services.security.authorizer, request.session, ACLOperation.DELETE, group_id)
            await services.groups.delete_group(group_id)
            results.append({"group_id": group_id, "error_code": 0})
        except Exception as exc:
            results.append({"group_id": group_id, "error_code": error_code(exc)})
    return {"results": results}
