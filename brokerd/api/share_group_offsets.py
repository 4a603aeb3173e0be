"""The share group offsets admin APIs (KIP-932), at the group's coordinator.

DescribeShareGroupOffsets: each share partition's start offset (SPSO) and the leader epoch
that wrote it, as persisted in __share_group_state; -1 for a partition the group never read.
Without topics named, every partition the group has share state for (as Kafka answers from
the group's initialized share partitions), with or without members. Needs DESCRIBE on the
group and on each topic.

AlterShareGroupOffsets starts share partitions over at the given offsets, and
DeleteShareGroupOffsets forgets the share partitions of whole topics (the group then starts
as its share.auto.offset.reset says); both only for a group without members (NON_EMPTY_GROUP
otherwise), needing READ (Alter) or DELETE (Delete) on the group and READ on each topic, as
in Kafka. The records' states are dropped with the old start offset.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.admin import ACLOperation
from kafka.errors import KafkaError, NonEmptyGroupError, UnknownTopicOrPartitionError

from brokerd.api.authorization import Permission, require_group
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.share.share_state import ShareState

MAX_PARTITIONS = 10_000  # per group and request
ZERO_UUID = uuid.UUID(int=0)


async def handle_describe(services: BrokerServices, request: Request) -> dict:
    describable = Permission(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    groups = [await _describe_group(services, request, g, describable) for g in request.body.groups]
    return {"throttle_time_ms": 0, "groups": groups}


async def _describe_group(
    services: BrokerServices, request: Request, asked: Any, describable: Permission
) -> dict:
    group_id = asked.group_id
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.DESCRIBE, group_id)
        services.groups.share_group_describe(group_id)  # NOT_COORDINATOR unless coordinated here
    except KafkaError as exc:
        return {
            "group_id": group_id,
            "topics": [],
            "error_code": error_code(exc),
            "error_message": error_message(exc),
        }
    wanted: list[tuple[str, list[int] | None]]
    known: dict[tuple[str, int], ShareState] | None = None  # read already
    if asked.topics is None:
        try:
            known = {
                (key.topic_id, key.partition): state
                for key, state in (await services.share.partitions.persisted_states(group_id)).items()
            }
            wanted = _partitions_of(services, known, describable)
        except (KafkaError, OSError, TimeoutError) as exc:
            return {
                "group_id": group_id,
                "topics": [],
                "error_code": error_code(exc),
                "error_message": error_message(exc),
            }
    else:
        wanted = [(t.topic_name, list(t.partitions)) for t in asked.topics]
    topics = []
    budget = MAX_PARTITIONS
    for name, partitions in wanted:
        record = services.metadata.topics.get(name)
        refused = describable.refusal(name)
        if record is None or refused is not None:
            error = refused or UnknownTopicOrPartitionError("This server does not host this topic-partition.")
            asked_indexes: list[int] = partitions or []
            topics.append(
                {
                    "topic_name": name,
                    "topic_id": ZERO_UUID,
                    "partitions": [_partition(i, -1, -1, error) for i in asked_indexes[:budget]],
                }
            )
            budget -= len(asked_indexes)
            continue
        indexes = sorted(record.partitions) if partitions is None else partitions
        entries = []
        for index in indexes[: max(budget, 0)]:
            try:
                if index not in record.partitions:
                    raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
                state = (
                    known.get((record.topic_id, index))
                    if known is not None
                    else await services.share.partitions.persisted_state(group_id, record.topic_id, index)
                )
                entries.append(
                    _partition(index, -1, -1, None)
                    if state is None
                    else _partition(index, state.start_offset, state.leader_epoch, None)
                )
            except (KafkaError, OSError, TimeoutError) as exc:
                entries.append(_partition(index, -1, -1, exc))
        budget -= len(indexes)
        topics.append({"topic_name": name, "topic_id": uuid.UUID(hex=record.topic_id), "partitions": entries})
    return {"group_id": group_id, "topics": topics, "error_code": 0, "error_message": None}


def _partitions_of(
    services: BrokerServices, known: dict[tuple[str, int], ShareState], describable: Permission
) -> list[tuple[str, list[int] | None]]:
    """Every partition the group has share state for (Kafka's initialized share partitions
    of the group), whether or not a member subscribes to its topic now; topics deleted
    since, or not describable, left out."""
    names = {record.topic_id: name for name, record in services.metadata.topics.items()}
    by_topic: dict[str, list[int]] = {}
    for topic_id, index in known:
        name = names.get(topic_id)
        if name is not None and describable.allows(name):
            by_topic.setdefault(name, []).append(index)
    return [(name, sorted(indexes)) for name, indexes in sorted(by_topic.items())]


def _partition(index: int, start_offset: int, leader_epoch: int, error: Exception | None) -> dict:
    return {
        "partition_index": index,
        "start_offset": start_offset,
        "leader_epoch": leader_epoch,
        "error_code": 0 if error is None else error_code(error),
        "error_message": None if error is None else error_message(error),
    }


def _require_empty(services: BrokerServices, group_id: str) -> None:
    """NOT_COORDINATOR unless this broker coordinates the group; NON_EMPTY_GROUP while it
    has members."""
    group = services.groups.share_group_describe(group_id)
    if group is not None and group.members:
        raise NonEmptyGroupError(
            "The group is not empty: its share group offsets can be changed only while it has no members."
        )


def _group_refused(exc: KafkaError) -> dict:
    """The answer when the group itself is refused (no ACL, or it still has members)."""
    return {
        "throttle_time_ms": 0,
        "error_code": error_code(exc),
        "error_message": error_message(exc),
        "responses": [],
    }


async def handle_alter(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.READ, body.group_id)
        _require_empty(services, body.group_id)
    except KafkaError as exc:
        return _group_refused(exc)
    readable = Permission(services.security.authorizer, request.session, ACLOperation.READ)
    responses = []
    budget = MAX_PARTITIONS
    for topic in body.topics:
        record = services.metadata.topics.get(topic.topic_name)
        entries = []
        for p in topic.partitions[: max(budget, 0)]:
            try:
                refused = readable.refusal(topic.topic_name)
                if refused is not None:
                    raise refused
                if record is None or p.partition_index not in record.partitions:
                    raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
                await services.share.partitions.reset_state(
                    body.group_id, record.topic_id, p.partition_index, max(p.start_offset, 0)
                )
                entries.append({"partition_index": p.partition_index, "error_code": 0, "error_message": None})
            except (KafkaError, OSError, TimeoutError) as exc:
                entries.append(
                    {
                        "partition_index": p.partition_index,
                        "error_code": error_code(exc),
                        "error_message": error_message(exc),
                    }
                )
        budget -= len(topic.partitions)
        topic_id = uuid.UUID(hex=record.topic_id) if record is not None else ZERO_UUID
        responses.append({"topic_name": topic.topic_name, "topic_id": topic_id, "partitions": entries})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}


async def handle_delete(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        require_group(services.security.authorizer, request.session, ACLOperation.DELETE, body.group_id)
        _require_empty(services, body.group_id)
    except KafkaError as exc:
        return _group_refused(exc)
    readable = Permission(services.security.authorizer, request.session, ACLOperation.READ)
    responses = []
    for topic in body.topics[:MAX_PARTITIONS]:
        record = services.metadata.topics.get(topic.topic_name)
        try:
            refused = readable.refusal(topic.topic_name)
            if refused is not None:
                raise refused
            if record is None:
                raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
            for index in sorted(record.partitions):
                await services.share.partitions.reset_state(body.group_id, record.topic_id, index, None)
            error: Exception | None = None
        except (KafkaError, OSError, TimeoutError) as exc:
            error = exc
        responses.append(
            {
                "topic_name": topic.topic_name,
                "topic_id": uuid.UUID(hex=record.topic_id) if record is not None else ZERO_UUID,
                "error_code": 0 if error is None else error_code(error),
                "error_message": None if error is None else error_message(error),
            }
        )
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}
