"""Committed offsets: OffsetCommit, OffsetFetch and OffsetDelete."""

from __future__ import annotations

import time

from kafka.errors import UnknownTopicOrPartitionError, UnstableOffsetCommitError

from brokerd.api.errors import error_code
from brokerd.coordinator.offsets_topic import CommittedOffset


async def handle_commit(broker, request) -> dict:
    """Commit the partitions of known topics; unknown ones get UNKNOWN_TOPIC_OR_PARTITION each,
    as in Kafka, so a typo in one topic name does not lose the other commits."""
    body = request.body

    async def commit(offsets):
        await broker.coordinator.commit(body.group_id, body.generation_id_or_member_epoch,
                                        body.member_id, body.group_instance_id, offsets)
    return await _commit_known(broker, body.topics, commit)


async def handle_txn_commit(broker, request) -> dict:
    """TxnOffsetCommit: offsets that take effect when the producer's transaction commits."""
    body = request.body

    async def commit(offsets):
        await broker.coordinator.commit_transactional(body.group_id, body.producer_id,
                                                      body.producer_epoch, offsets)
    return await _commit_known(broker, body.topics, commit)


async def _commit_known(broker, topics, commit) -> dict:
    now = int(time.time() * 1000)
    requested = [(t.name, p) for t in topics for p in t.partitions]
    codes = {(name, p.partition_index): 0 if partition_exists(broker, name, p.partition_index)
             else UnknownTopicOrPartitionError.errno for name, p in requested}
    offsets = {(name, p.partition_index): CommittedOffset(
        p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now)
        for name, p in requested if not codes[(name, p.partition_index)]}
    try:
        await commit(offsets)
    except Exception as exc:
        code = error_code(exc)
        codes = {tp: c or code for tp, c in codes.items()}
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": codes[(t.name, p.partition_index)]}
            for p in t.partitions]}
        for t in topics]}


def partition_exists(broker, topic: str, partition: int) -> bool:
    if not _is_known(broker, topic, partition):
        broker.refresh_metadata()  # the topic may be a moment old; our cache polls for it
    return _is_known(broker, topic, partition)


def _is_known(broker, topic: str, partition: int) -> bool:
    record = broker.topics.get(topic)
    return record is not None and partition in record.partitions


async def handle_fetch(broker, request) -> dict:
    """Committed offsets; with require_stable (v7) a partition an open transaction is
    committing offsets for answers UNSTABLE_OFFSET_COMMIT, and the client asks again."""
    body = request.body
    wanted = None if body.topics is None else [
        (t.name, p) for t in body.topics for p in t.partition_indexes]
    try:
        committed = broker.coordinator.committed(body.group_id, wanted)
        unstable = (broker.coordinator.unstable(body.group_id)
                    if getattr(body, "require_stable", False) else set())
    except Exception as exc:
        return {"throttle_time_ms": 0, "topics": [], "error_code": error_code(exc)}
    by_topic: dict[str, list] = {}
    for (topic, partition), c in sorted(committed.items()):
        code = UnstableOffsetCommitError.errno if (topic, partition) in unstable else 0
        c = None if code else c
        by_topic.setdefault(topic, []).append({
            "partition_index": partition, "committed_offset": c.offset if c else -1,
            "committed_leader_epoch": c.leader_epoch if c else -1,
            "metadata": c.metadata if c else "", "error_code": code})
    return {"throttle_time_ms": 0, "error_code": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}


async def handle_delete(broker, request) -> dict:
    body = request.body
    partitions = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
    try:
        refused = await broker.coordinator.delete_offsets(body.group_id, partitions)
    except Exception as exc:
        return {"error_code": error_code(exc), "throttle_time_ms": 0, "topics": []}
    return {"error_code": 0, "throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index,
             "error_code": error_code(refused[(t.name, p.partition_index)])
             if (t.name, p.partition_index) in refused else 0}
            for p in t.partitions]} for t in body.topics]}
