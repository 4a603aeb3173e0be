"""ShareFetch (KIP-932): a share group member's fetch from a partition leader.

The share session (epoch 0 opens, -1 closes, otherwise the next epoch) holds the partitions
the member fetches; the request adds to them and forgets some. Acknowledgements piggy-backed
on the request are applied and persisted first. Then every session partition acquires what
it can for the member, up to MaxRecords in all, as whole record batches read from the log
(bytes, as Fetch answers them) with the offset ranges acquired and their delivery counts;
with nothing to acquire the request waits up to MaxWaitMs for new records, released ones or
expired locks. A closing fetch (-1) only acknowledges, then releases what the member holds.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.errors import GroupAuthorizationFailedError, InvalidRequestError, KafkaError

from brokerd.api.request import Request
from brokerd.api.share_requests import ShareRequest, top_level_error
from brokerd.ports.services import BrokerServices
from brokerd.share.share_sessions import FINAL_EPOCH, INITIAL_EPOCH
from brokerd.waiters import wait_any

MAX_WAIT_MS = 30_000  # bounds a long poll whatever the client asks
NO_LEADER = {"leader_id": -1, "leader_epoch": -1}


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    share = ShareRequest.of(services, request)
    lock_ms = 0
    try:
        if not body.group_id or not body.member_id:
            raise InvalidRequestError("A ShareFetch needs a group id and a member id")
        if not share.group_allowed():
            raise GroupAuthorizationFailedError("Group authorization failed.")
        lock_ms = services.share.partitions.lock_duration_ms(body.group_id)
        sessions = services.share.sessions
        if body.share_session_epoch == INITIAL_EPOCH:
            if not sessions.has_sessions_of(body.group_id):
                # the group's first member here since it emptied: its share partitions are
                # read back, as an admin may have reset them meanwhile
                services.share.partitions.forget_idle_group(body.group_id)
            session, _ = sessions.open(body.group_id, body.member_id)
        else:
            session = sessions.use(body.group_id, body.member_id, body.share_session_epoch)
    except KafkaError as exc:
        return _response(share, lock_ms, top_level_error(exc))
    for forgotten in body.forgotten_topics_data or ():
        name = share.names.get(forgotten.topic_id)
        for index in forgotten.partitions if name is not None else ():
            session.partitions.discard((name, index))
    wanted = []
    for topic in body.topics:
        for p in topic.partitions:
            key = (topic.topic_id, p.partition_index)
            try:
                name = share.topic(topic.topic_id)
            except KafkaError as exc:
                share.fail(key, exc)
                continue
            wanted.append((name, p.partition_index))
    if body.share_session_epoch != FINAL_EPOCH:
        session.partitions.update(wanted)
    await share.acknowledge(body.topics)
    if share.close_if_final(session):
        return _response(share, lock_ms, {"error_code": 0, "error_message": None})
    if body.max_bytes > 0:  # MaxBytes 0: acknowledgements only, no records (as Kafka)
        await _acquire(services, share, session.partitions, body)
    return _response(share, lock_ms, {"error_code": 0, "error_message": None})


async def _acquire(
    services: BrokerServices, share: ShareRequest, partitions: set[tuple[str, int]], body: Any
) -> None:
    """Acquire records across the session's partitions, long-polling while there are none."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(max(body.max_wait_ms, 0), MAX_WAIT_MS) / 1000
    by_name = {name: topic_id for topic_id, name in share.names.items()}
    manager = services.share.partitions
    while True:
        budget = max(body.max_records, 1)
        bytes_left = body.max_bytes
        watched = []
        acquired_any = False
        for name, index in sorted(partitions):
            topic_id = by_name.get(name)
            if topic_id is None:
                continue
            key = (topic_id, index)
            if share.partitions.get(key, {}).get("error_code"):
                continue
            if budget <= 0 or bytes_left <= 0:
                break
            try:
                if not share.readable.allows(name):
                    raise share.readable.denial()
                fetched = manager.fetch(
                    body.group_id, body.member_id, name, topic_id.hex, index, budget, bytes_left
                )
            except KafkaError as exc:
                share.fail(key, exc)
                continue
            watched.extend(fetched.watched)
            if fetched.acquired:
                acquired_any = True
                entry = share.entry(key)
                entry["records"] = fetched.records
                entry["acquired_records"] = [
                    {
                        "first_offset": a.first_offset,
                        "last_offset": a.last_offset,
                        "delivery_count": a.delivery_count,
                    }
                    for a in fetched.acquired
                ]
                budget -= sum(a.last_offset - a.first_offset + 1 for a in fetched.acquired)
                bytes_left -= len(fetched.records)
        remaining = deadline - loop.time()
        if (
            acquired_any
            or remaining <= 0
            or not watched
            or any(e["error_code"] for e in share.partitions.values())
        ):
            return
        if not await wait_any(watched, remaining):
            return


def _response(share: ShareRequest, lock_ms: int, top: dict) -> dict:
    extra: dict[str, object] = {
        "acknowledge_error_code": 0,
        "acknowledge_error_message": None,
        "current_leader": NO_LEADER,
        "records": b"",
        "acquired_records": [],
    }
    return {
        "throttle_time_ms": 0,
        **top,
        "acquisition_lock_timeout_ms": lock_ms,
        "responses": share.responses(extra) if top["error_code"] == 0 else [],
        "node_endpoints": share.node_endpoints() if top["error_code"] == 0 else [],
    }
