"""Committed offsets: OffsetCommit, OffsetFetch and OffsetDelete."""

from __future__ import annotations

import time

from brokerd.api.errors import error_code
from brokerd.coordinator.offsets_topic import CommittedOffset


async def handle_commit(broker, request) -> dict:
    body = request.body
    now = int(time.time() * 1000)
    offsets = {(t.name, p.partition_index): CommittedOffset(
        p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now)
        for t in body.topics for p in t.partitions}
    try:
        await broker.coordinator.commit(body.group_id, body.generation_id_or_member_epoch,
                                        body.member_id, offsets)
        code = 0
    except Exception as exc:
        code = error_code(exc)
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": code}
                                        for p in t.partitions]}
        for t in body.topics]}


async def handle_fetch(broker, request) -> dict:
    body = request.body
    wanted = None if body.topics is None else [
        (t.name, p) for t in body.topics for p in t.partition_indexes]
    try:
        committed = broker.coordinator.committed(body.group_id, wanted)
    except Exception as exc:
        return {"throttle_time_ms": 0, "topics": [], "error_code": error_code(exc)}
    by_topic: dict[str, list] = {}
    for (topic, partition), c in sorted(committed.items()):
        by_topic.setdefault(topic, []).append({
            "partition_index": partition, "committed_offset": c.offset if c else -1,
            "committed_leader_epoch": c.leader_epoch if c else -1,
            "metadata": c.metadata if c else "", "error_code": 0})
    return {"throttle_time_ms": 0, "error_code": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}


async def handle_delete(broker, request) -> dict:
    body = request.body
    partitions = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
    try:
        await broker.coordinator.delete_offsets(body.group_id, partitions)
    except Exception as exc:
        return {"error_code": error_code(exc), "throttle_time_ms": 0, "topics": []}
    return {"error_code": 0, "throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": 0}
                                        for p in t.partitions]} for t in body.topics]}
