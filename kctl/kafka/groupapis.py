"""Kafka 4's group APIs that confluent-kafka's AdminClient lacks, sent through kafka-python.

confluent-kafka describes a KIP-848 consumer group without its epochs and cannot list or
describe share groups (KIP-932) at all. Those answers come from ConsumerGroupDescribe (API
69: the group epoch, the target assignment's epoch, each member's epoch, assignment and
target assignment), ShareGroupDescribe (API 77: members and their assignments) and
DescribeShareGroupOffsets (API 90: each share partition's start offset), each asked of the
group's coordinator, and ListGroups v5 with a type filter. The message classes are Kafka's
JSON schemas as brokerd.protocol carries them; the requests are plain Kafka protocol, so
these work against any Kafka 4 cluster. No admin client has a call for them: kctl sends them
itself (kctl.kafka.protocolclient), as `quotas` does.

Everything a response lists is cut to MAX_MEMBERS members and MAX_PARTITIONS partitions per
group, and a listing to MAX_GROUPS groups: a description is for reading, not for holding a
whole cluster.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError, for_code
from kafka.protocol.admin import ListGroupsRequest
from kafka.protocol.metadata import MetadataRequest

from brokerd.protocol.codec import (
    ConsumerGroupDescribeRequest,
    DescribeShareGroupOffsetsRequest,
    ShareGroupDescribeRequest,
)
from kctl.kafka import protocolclient, pyadmin
from kctl.kafka.client import Connection
from kctl.kafka.protocolclient import ProtocolClient
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

MAX_GROUPS = 10_000
MAX_MEMBERS = 10_000
MAX_PARTITIONS = 100_000
GROUP_ID_NOT_FOUND = 69

Partition = tuple[str, int]


def _check(code: int, message: str | None, doing: str) -> None:
    if code == 0:
        return
    error = for_code(code)
    exit_code = ExitCode.NOT_FOUND if code == GROUP_ID_NOT_FOUND else pyadmin.exit_code(error)
    raise KctlError(f"cannot {doing}: {error.__name__}: {message or error.description}", exit_code)


def share_group_ids(conn: Connection) -> list[str]:
    """The ids of every share group of the cluster (ListGroups v5 for type share)."""
    return protocolclient.session(conn, "list share groups", _share_group_ids)


def list_share_groups(conn: Connection) -> list[dict]:
    """Every share group of the cluster, each described by its coordinator:
    [{"group", "state", "coordinator", "members"}]."""

    def work(client: ProtocolClient) -> list[dict]:
        rows = []
        for group_id in _share_group_ids(client):
            node = client.group_coordinator(group_id)
            described = client.send(
                ShareGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False), node
            )
            group = described.groups[0]
            if group.error_code == 0:  # else gone since it was listed
                rows.append(
                    {
                        "group": group_id,
                        "state": group.group_state,
                        "coordinator": client.address(node),
                        "members": len(group.members),
                    }
                )
        return rows

    return protocolclient.session(conn, "list share groups", work)


def _share_group_ids(client: ProtocolClient) -> list[str]:
    """ListGroups v5 for type share, asked of each broker (each lists the groups it
    coordinates)."""
    found = []
    for broker_id in client.broker_ids():
        request = ListGroupsRequest(types_filter=["share"], min_version=5)
        try:
            response = client.send(request, broker_id)
        except (IncompatibleBrokerVersion, UnsupportedVersionError):
            return []  # a broker before Kafka 4 (no ListGroups v5): no share groups
        _check(response.error_code, None, "list share groups")
        found += [g.group_id for g in response.groups[:MAX_GROUPS]]
    return sorted(set(found))[:MAX_GROUPS]


def describe_consumer_group(conn: Connection, group_id: str) -> dict:
    """A KIP-848 group as its coordinator has it (ConsumerGroupDescribe): {"group_epoch",
    "assignment_epoch", "assignor", "state", "members": [{"member_id", "member_epoch",
    "client_id", "host", "instance_id", "subscribed_topics", "subscribed_regex",
    "assignment", "target_assignment"}]}, assignments as sorted (topic, partition) lists."""
    doing = f"describe consumer group {group_id!r}"

    def work(client: ProtocolClient) -> Any:
        request = ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False)
        return client.send(request, client.group_coordinator(group_id))

    group = protocolclient.session(conn, doing, work).groups[0]
    _check(group.error_code, group.error_message, doing)
    return {
        "state": group.group_state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor_name or None,
        "members": [
            {
                "member_id": m.member_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "host": m.client_host,
                "instance_id": m.instance_id,
                "subscribed_topics": list(m.subscribed_topic_names or []),
                "subscribed_regex": m.subscribed_topic_regex,
                "assignment": _partitions(m.assignment.topic_partitions),
                "target_assignment": _partitions(m.target_assignment.topic_partitions),
            }
            for m in group.members[:MAX_MEMBERS]
        ],
    }


def describe_share_group(conn: Connection, group_id: str) -> dict:
    """A share group (ShareGroupDescribe and DescribeShareGroupOffsets at its coordinator):
    {"state", "group_epoch", "assignment_epoch", "assignor", "coordinator", "members":
    [{"member_id", "member_epoch", "client_id", "host", "subscribed_topics", "assignment"}],
    "start_offsets": {(topic, partition): offset or None}}; a partition the group never
    read has no start offset (None). Exit 4 for an unknown group."""
    doing = f"describe share group {group_id!r}"

    def work(client: ProtocolClient) -> tuple[Any, Any, bool, dict | None, dict[uuid.UUID, str]]:
        node = client.group_coordinator(group_id)
        described = client.send(
            ShareGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False), node
        )
        offsets = client.send(_offsets_request(group_id, None), node)
        everything: dict[str, list[int]] = {}
        if not described.groups[0].members and not offsets.groups[0].topics:
            # Without members a broker may know no topics to answer for: ask for every topic
            # (a partition the group never read comes back without a start offset).
            everything = _every_partition(client)
            if everything:
                offsets = client.send(_offsets_request(group_id, everything), node)
        names = _topic_names(client) if _unnamed(described) else {}
        return described, offsets, bool(everything), client.address(node), names

    described, offsets, asked_everything, node, names = protocolclient.session(conn, doing, work)
    group = described.groups[0]
    _check(group.error_code, group.error_message, doing)
    return {
        "state": group.group_state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor": group.assignor_name or None,
        "coordinator": node,
        "members": [
            {
                "member_id": m.member_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "host": m.client_host,
                "subscribed_topics": list(m.subscribed_topic_names or []),
                "assignment": _partitions(m.assignment.topic_partitions, names),
            }
            for m in group.members[:MAX_MEMBERS]
        ],
        "start_offsets": _start_offsets(offsets, doing, read_only=asked_everything),
    }


def _offsets_request(group_id: str, topics: dict[str, list[int]] | None) -> Any:
    """DescribeShareGroupOffsets for one group: these topics' partitions, or (None) the
    topics the coordinator knows the group reads."""
    group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
    named = (
        None
        if topics is None
        else [
            group.DescribeShareGroupOffsetsRequestTopic(topic_name=name, partitions=partitions)
            for name, partitions in topics.items()
        ]
    )
    return DescribeShareGroupOffsetsRequest(groups=[group(group_id=group_id, topics=named)])


def _every_partition(client: ProtocolClient) -> dict[str, list[int]]:
    """Topic -> partitions of every topic but the internal ones, at most MAX_PARTITIONS."""
    response = client.send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
    found: dict[str, list[int]] = {}
    budget = MAX_PARTITIONS
    for t in sorted(response.topics, key=lambda t: t.name or ""):
        if t.is_internal or not t.name or t.name.startswith("__") or budget <= 0:
            continue
        found[t.name] = sorted(p.partition_index for p in t.partitions)[:budget]
        budget -= len(found[t.name])
    return found


def _start_offsets(response: Any, doing: str, read_only: bool = False) -> dict[Partition, int | None]:
    """(topic, partition) -> start offset, None where the group never read; ``read_only``
    leaves out the partitions the group never read."""
    group = response.groups[0]
    _check(group.error_code, group.error_message, doing)
    starts: dict[Partition, int | None] = {}
    for topic in group.topics:
        for p in topic.partitions:
            if len(starts) >= MAX_PARTITIONS:
                return starts
            if p.error_code == 0 and (p.start_offset >= 0 or not read_only):
                starts[(topic.topic_name, p.partition_index)] = (
                    p.start_offset if p.start_offset >= 0 else None
                )
    return starts


def _unnamed(described: Any) -> bool:
    """Whether an assignment names a topic by id only (Kafka sends both the id and the name)."""
    return any(
        not t.topic_name for g in described.groups for m in g.members for t in m.assignment.topic_partitions
    )


def _topic_names(client: ProtocolClient) -> dict[uuid.UUID, str]:
    """Topic id -> name, from a Metadata request for every topic."""
    response = client.send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
    return {t.topic_id: t.name for t in response.topics}


def _partitions(topics: Any, names: dict[uuid.UUID, str] | None = None) -> list[Partition]:
    """(topic, partition) pairs of an assignment, sorted, at most MAX_PARTITIONS; a topic sent
    by id only is named from ``names`` (or by its id)."""
    pairs = [
        (t.topic_name or (names or {}).get(t.topic_id, str(t.topic_id)), p)
        for t in topics
        for p in t.partitions[:MAX_PARTITIONS]
    ]
    return sorted(pairs)[:MAX_PARTITIONS]
