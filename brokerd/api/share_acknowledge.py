"""ShareAcknowledge (KIP-932): acknowledgements without a fetch, in the member's share
session (which it cannot open: epoch 0 is INVALID_SHARE_SESSION_EPOCH); -1 closes the session
after acknowledging and releases what the member still holds. Answered once the
acknowledgements are persisted."""

from __future__ import annotations

from kafka.errors import (
    GroupAuthorizationFailedError,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    KafkaError,
)

from brokerd.api.request import Request
from brokerd.api.share_requests import ShareRequest, top_level_error
from brokerd.ports.services import BrokerServices
from brokerd.share.share_sessions import INITIAL_EPOCH

NO_LEADER = {"leader_id": -1, "leader_epoch": -1}


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    share = ShareRequest.of(services, request)
    try:
        if not body.group_id or not body.member_id:
            raise InvalidRequestError("A ShareAcknowledge needs a group id and a member id")
        if not share.group_allowed():
            raise GroupAuthorizationFailedError("Group authorization failed.")
        if body.share_session_epoch == INITIAL_EPOCH:
            raise InvalidShareSessionEpochError("A ShareAcknowledge cannot open a share session (epoch 0)")
        session = services.share.sessions.use(body.group_id, body.member_id, body.share_session_epoch)
    except KafkaError as exc:
        return {"throttle_time_ms": 0, **top_level_error(exc), "responses": [], "node_endpoints": []}
    await share.acknowledge(body.topics)
    share.close_if_final(session)
    for entry in share.partitions.values():  # ShareAcknowledge has one error per partition
        if entry.get("acknowledge_error_code"):
            entry["error_code"] = entry["acknowledge_error_code"]
            entry["error_message"] = entry["acknowledge_error_message"]
        entry.pop("acknowledge_error_code", None)
        entry.pop("acknowledge_error_message", None)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "responses": share.responses({"current_leader": NO_LEADER}),
        "node_endpoints": share.node_endpoints(),
    }
