"""Committed offsets: OffsetCommit, OffsetFetch and OffsetDelete.

Permissions are Kafka's, the group's checked first: committing needs READ on the group (and,
for TxnOffsetCommit, WRITE on the transactional id before that) and READ on each topic;
fetching DESCRIBE on the group and on each topic; deleting DELETE on the group and READ on
each topic. A refused group or transactional id fails the whole request; a refused topic
answers TOPIC_AUTHORIZATION_FAILED for its partitions (or, fetching every committed offset, is
left out).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import OffsetMetadataTooLargeError, UnknownTopicOrPartitionError, UnstableOffsetCommitError

from brokerd.api.authorization import Permission, refusal, require_group
from brokerd.api.errors import error_code
from brokerd.api.request import Request
from brokerd.coordinator.offsets_topic import CommittedOffset
from brokerd.metadata.image import TopicImage
from brokerd.ports.services import BrokerServices

# how a commit handler stores the offsets it accepted (a plain or a transactional commit)
Committer = Callable[[dict[tuple[str, int], CommittedOffset]], Awaitable[None]]


async def handle_commit(services: BrokerServices, request: Request) -> dict:
    """Commit the partitions of known topics; unknown ones get UNKNOWN_TOPIC_OR_PARTITION each,
    as in Kafka, so a typo in one topic name does not lose the other commits."""
    body = request.body

    async def commit(offsets: dict[tuple[str, int], CommittedOffset]) -> None:
        await services.groups.commit(
            body.group_id, body.generation_id_or_member_epoch, body.member_id, body.group_instance_id, offsets
        )

    refused = refusal(
        services.security.authorizer, request.session, ACLOperation.READ, ResourceType.GROUP, body.group_id
    )
    return await _commit_known(services, request, commit, refused)


async def handle_txn_commit(services: BrokerServices, request: Request) -> dict:
    """TxnOffsetCommit: offsets that take effect when the producer's transaction commits."""
    body = request.body

    async def commit(offsets: dict[tuple[str, int], CommittedOffset]) -> None:
        await services.groups.commit_transactional(
            body.group_id, body.producer_id, body.producer_epoch, offsets
        )

    refused = refusal(
        services.security.authorizer,
        request.session,
        ACLOperation.WRITE,
        ResourceType.TRANSACTIONAL_ID,
        body.transactional_id,
    ) or refusal(
        services.security.authorizer, request.session, ACLOperation.READ, ResourceType.GROUP, body.group_id
    )
    return await _commit_known(services, request, commit, refused)


async def _commit_known(
    services: BrokerServices, request: Request, commit: Committer, refused: Exception | None
) -> dict:
    """Commit what the client may commit; ``refused`` (the group's or transactional id's
    denial) answers every partition."""
    topics = request.body.topics
    if refused is not None:
        return _commit_response(topics, lambda name, partition: error_code(refused))
    readable = Permission(services.security.authorizer, request.session, ACLOperation.READ)
    now = int(time.time() * 1000)
    requested = [(t.name, p) for t in topics for p in t.partitions]
    max_metadata = services.config.get("offset.metadata.max.bytes")
    codes = {
        (name, p.partition_index): _commit_code(services, readable, name, p.partition_index)
        or (OffsetMetadataTooLargeError.errno if len(p.committed_metadata or "") > max_metadata else 0)
        for name, p in requested
    }
    offsets = {
        (name, p.partition_index): CommittedOffset(
            p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now
        )
        for name, p in requested
        if not codes[(name, p.partition_index)]
    }
    try:
        await commit(offsets)
    except Exception as exc:
        code = error_code(exc)
        codes = {tp: c or code for tp, c in codes.items()}
    return _commit_response(topics, lambda name, partition: codes[(name, partition)])


def _commit_code(services: BrokerServices, readable: Permission, topic: str, partition: int) -> int:
    refused = readable.refusal(topic)
    if refused is not None:
        return error_code(refused)
    return 0 if partition_exists(services, topic, partition) else UnknownTopicOrPartitionError.errno


def _commit_response(topics, code_of) -> dict:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": code_of(t.name, p.partition_index)}
                    for p in t.partitions
                ],
            }
            for t in topics
        ],
    }


def partition_exists(services: BrokerServices, topic: str, partition: int) -> bool:
    if not _is_known(services.metadata.topics, topic, partition):
        services.metadata.apply_metadata_delta()  # the topic may be a moment old; our cache polls for it
    return _is_known(services.metadata.topics, topic, partition)


def _is_known(topics: Mapping[str, TopicImage], topic: str, partition: int) -> bool:
    record = topics.get(topic)
    return record is not None and partition in record.partitions


async def handle_fetch(services: BrokerServices, request: Request) -> dict:
    """Committed offsets; with require_stable (v7) a partition an open transaction is
    committing offsets for answers UNSTABLE_OFFSET_COMMIT, and the client asks again. v8 asks
    for several groups at once; v9 names the member asking, whose consumer group epoch must
    be current (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID otherwise, as in Kafka)."""
    body = request.body
    require_stable = getattr(body, "require_stable", False)
    if request.header.api_version < 8:
        code, topics = _fetch_group(services, request, body.group_id, body.topics, require_stable)
        return {"throttle_time_ms": 0, "topics": topics, "error_code": code}
    groups = []
    for group in body.groups:
        code, topics = _fetch_group(
            services,
            request,
            group.group_id,
            group.topics,
            require_stable,
            getattr(group, "member_id", None),
            getattr(group, "member_epoch", -1),
        )
        groups.append({"group_id": group.group_id, "topics": topics, "error_code": code})
    return {"throttle_time_ms": 0, "groups": groups}


def _fetch_group(
    services: BrokerServices,
    request: Request,
    group_id: str,
    requested,
    require_stable: bool,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> tuple[int, list[dict]]:
    """One group's committed offsets of the ``requested`` topics (None: all of them), and
    the group's error code."""
    describable = Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.DESCRIBE, group_id)
        wanted = (
            None
            if requested is None
            else [(t.name, p) for t in requested for p in t.partition_indexes if describable.allows(t.name)]
        )
        committed = services.groups.committed(group_id, wanted, member_id, member_epoch)
        unstable = services.groups.unstable(group_id) if require_stable else set()
    except Exception as exc:
        return error_code(exc), []
    by_topic: dict[str, list] = {}
    for (topic, partition), c in sorted(committed.items()):
        if not describable.allows(topic):  # every committed offset: the topic is left out
            continue
        code = UnstableOffsetCommitError.errno if (topic, partition) in unstable else 0
        c = None if code else c
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": c.offset if c else -1,
                "committed_leader_epoch": c.leader_epoch if c else -1,
                "metadata": c.metadata if c else "",
                "error_code": code,
            }
        )
    for t in requested or ():
        refused = describable.refusal(t.name)
        if refused is not None:
            by_topic.setdefault(t.name, []).extend(
                {
                    "partition_index": p,
                    "committed_offset": -1,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": error_code(refused),
                }
                for p in t.partition_indexes
            )
    return 0, [{"name": t, "partitions": ps} for t, ps in by_topic.items()]


async def handle_delete(services: BrokerServices, request: Request) -> dict:
    body = request.body
    readable = Permission(services.security.authorizer, request.session, ACLOperation.READ)
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.DELETE, body.group_id)
        denied = {
            (t.name, p.partition_index): readable.refusal(t.name)
            for t in body.topics
            for p in t.partitions
            if not readable.allows(t.name)
        }
        refused = await services.groups.delete_offsets(
            body.group_id,
            [
                (t.name, p.partition_index)
                for t in body.topics
                for p in t.partitions
                if (t.name, p.partition_index) not in denied
            ],
        )
        refused.update(denied)
    except Exception as exc:
        return {"error_code": error_code(exc), "throttle_time_ms": 0, "topics": []}
    return {
        "error_code": 0,
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": error_code(refused[(t.name, p.partition_index)])
                        if (t.name, p.partition_index) in refused
                        else 0,
                    }
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ],
    }
