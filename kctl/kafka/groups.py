"""Consumer groups over the wire: what `kctl group list|describe` and `kctl watch` know about
them, and the offsets `kctl group reset-offsets` commits and the groups `kctl group delete`
deletes.

Everything comes over the Kafka protocol (ListGroups, DescribeGroups, OffsetFetch,
ListOffsets), so it is right for any cluster. A group's partitions are those it has
committed offsets for plus those assigned to its members; lag is the high watermark minus
the committed offset, as in kafka-consumer-groups.sh and rpk. Each partition also carries
its last stable offset: read_committed consumers (kctl's default) stop there while a
transaction is open, so lag above it is records they cannot read yet, not records missed.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import cast

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import ConsumerGroupDescription, MemberDescription

from kctl.kafka import offsets
from kctl.kafka.client import Connection, result
from kctl.kafka.errors import from_kafka
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

# Kafka's own spelling of group states, as kafka-consumer-groups.sh and rpk print them.
STATE_NAMES = {
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.UNKNOWN: "Unknown",
}

Partition = tuple[str, int]

# ListGroups v5's group types (KIP-848): classic JoinGroup/SyncGroup groups, or groups whose
# members use group.protocol=consumer and the broker assigns.
GROUP_TYPES = {"classic": ConsumerGroupType.CLASSIC, "consumer": ConsumerGroupType.CONSUMER}
TYPE_NAMES = {t: name for name, t in GROUP_TYPES.items()}


def state_name(description: ConsumerGroupDescription) -> str:
    """The group's state as Kafka spells it."""
    # confluent-kafka makes the state a ConsumerGroupState but types it as any Enum.
    return STATE_NAMES[cast(ConsumerGroupState, description.state)]


def list_groups(conn: Connection, group_type: str | None = None) -> list[dict]:
    """Every group with its type, state and coordinator (ListGroups before v4 carries no
    state); ``group_type`` ("classic", "consumer" or "share") keeps only groups of that type.
    Share groups come from ListGroups v5 and ShareGroupDescribe (kctl.kafka.groupapis):
    confluent-kafka lists only the groups it can describe."""
    rows = [] if group_type == "share" else _consumer_groups(conn, group_type)
    if group_type in (None, "share"):
        rows += [
            {**row, "type": "share", "protocol_type": "share"} for row in _share_groups(conn, group_type)
        ]
    return sorted(rows, key=lambda r: r["group"])


def _share_groups(conn: Connection, group_type: str | None) -> list[dict]:
    """Share groups as list_share_groups has them; listing every type, a cluster kafka-python
    cannot ask (or too old to have share groups) lists the others, with a warning."""
    try:
        # raw KIP-848 and share group requests (kafka-python, brokerd's codec): on first use
        from kctl.kafka import groupapis

        return groupapis.list_share_groups(conn)
    except KctlError as exc:
        if group_type == "share":
            raise
        console.warn(f"share groups not listed: {exc.message}")
        return []


def group_ids(conn: Connection) -> list[str]:
    """The ids of every consumer and share group, without describing them."""
    listing = result(conn.admin().list_consumer_groups(request_timeout=conn.timeout), "list groups")
    try:
        from kctl.kafka import groupapis

        shared = groupapis.share_group_ids(conn)
    except KctlError:  # a cluster kafka-python cannot ask: its consumer groups still count
        shared = []
    return sorted({g.group_id for g in listing.valid} | set(shared))


def _consumer_groups(conn: Connection, group_type: str | None) -> list[dict]:
    options: dict = {"request_timeout": conn.timeout}
    if group_type is not None:
        options["types"] = {GROUP_TYPES[group_type]}
    listing = result(conn.admin().list_consumer_groups(**options), "list groups")
    types = {g.group_id: TYPE_NAMES.get(cast(ConsumerGroupType, g.type)) for g in listing.valid}
    ids = sorted(g.group_id for g in listing.valid)
    descriptions = _describe_all(conn, ids)
    rows = []
    for group_id in ids:
        description = descriptions[group_id]
        if description is None:
            continue
        rows.append(
            {
                "group": group_id,
                "type": types.get(group_id),
                "state": state_name(description),
                "protocol_type": _protocol_type(description),
                "coordinator": _coordinator(description),
                "members": len(description.members),
            }
        )
    return rows


def describe(conn: Connection, group_id: str) -> dict:
    """Summary, members and per-partition offsets and lag of one group; exit 4 if unknown.

    A KIP-848 consumer group also has its group epoch, the epoch of its target assignment
    and each member's epoch (ConsumerGroupDescribe); a share group is described by
    describe_share."""
    description = describe_one(conn, group_id)
    if description is None:
        return describe_share(conn, group_id)
    committed = committed_offsets(conn, group_id)
    owners = {
        (tp.topic, tp.partition): m for m in description.members for tp in m.assignment.topic_partitions
    }
    if description.state == ConsumerGroupState.DEAD and not committed and not owners:
        raise KctlError(f"unknown group {group_id!r}", ExitCode.NOT_FOUND)
    keys = sorted(set(committed) | set(owners))
    starts = offsets.log_starts(conn, keys)
    ends = offsets.high_watermarks(conn, keys)
    stables = offsets.last_stable_offsets(conn, keys)
    partitions = [
        _partition_row(key, committed.get(key), starts[key], stables[key], ends[key], owners.get(key))
        for key in keys
    ]
    group_type = TYPE_NAMES.get(cast(ConsumerGroupType, description.type))
    doc = {
        "group": group_id,
        "coordinator": _coordinator(description),
        "state": state_name(description),
        "type": group_type,
        "protocol_type": _protocol_type(description),
        "assignor": description.partition_assignor or None,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "group_instance_id": m.group_instance_id,
                "assignment": [
                    {"topic": tp.topic, "partition": tp.partition} for tp in m.assignment.topic_partitions
                ],
                # KIP-848: the partitions the broker is moving the member towards
                "target_assignment": None
                if m.target_assignment is None
                else [
                    {"topic": tp.topic, "partition": tp.partition}
                    for tp in m.target_assignment.topic_partitions
                ],
            }
            for m in description.members
        ],
        "total_lag": sum(p["lag"] for p in partitions if p["lag"] is not None),
        "partitions": partitions,
    }
    if group_type == "consumer":
        try:
            from kctl.kafka import groupapis

            _add_epochs(doc, groupapis.describe_consumer_group(conn, group_id))
        except KctlError as exc:  # gone since: described without its epochs
            if exc.code != ExitCode.NOT_FOUND:
                raise
    return doc


def _add_epochs(doc: dict, described: dict) -> None:
    """The epochs of a KIP-848 group: the group epoch (bumped by every membership or
    subscription change), the assignment epoch (the target assignment's), and each member's
    epoch (where its reconciliation has got to), matched by member id; and its state as
    Kafka names it (confluent-kafka knows only the classic states: Unknown for Assigning
    and Reconciling)."""
    doc["state"] = described["state"]  # KIP-848's own states (Assigning, Reconciling, ...)
    doc["group_epoch"] = described["group_epoch"]
    doc["assignment_epoch"] = described["assignment_epoch"]
    doc["assignor"] = doc["assignor"] or described["assignor"]
    epochs = {m["member_id"]: m["member_epoch"] for m in described["members"]}
    for member in doc["members"]:
        member["member_epoch"] = epochs.get(member["member_id"])


def describe_share(conn: Connection, group_id: str) -> dict:
    """A share group (KIP-932): its members with their epochs and assignments, and per
    partition the share-partition start offset (SPSO: every record below it is acknowledged
    or archived), the log start, the high watermark and the lag, here the high watermark
    minus the start offset (records above the start offset already acknowledged are counted
    too: Kafka's admin APIs do not say which records are in flight, nor their delivery
    counts). Exit 4 if unknown."""
    from kctl.kafka import groupapis

    described = groupapis.describe_share_group(conn, group_id)
    assigned: dict[Partition, list[str]] = {}
    for m in described["members"]:
        for key in m["assignment"]:
            assigned.setdefault(key, []).append(m["member_id"])
    keys = sorted(set(described["start_offsets"]) | set(assigned))
    starts = offsets.log_starts(conn, keys)
    ends = offsets.high_watermarks(conn, keys)
    partitions = []
    for key in keys:
        start, end = described["start_offsets"].get(key), ends[key]
        partitions.append(
            {
                "topic": key[0],
                "partition": key[1],
                "start_offset": start,
                "log_start_offset": starts[key],
                "high_watermark": end,
                "lag": None if start is None or end is None else max(0, end - start),
                "members": assigned.get(key, []),
            }
        )
    return {
        "group": group_id,
        "coordinator": described["coordinator"],
        "state": described["state"],
        "type": "share",
        "protocol_type": "share",
        "assignor": described["assignor"],
        "group_epoch": described["group_epoch"],
        "assignment_epoch": described["assignment_epoch"],
        "members": [
            {
                "member_id": m["member_id"],
                "member_epoch": m["member_epoch"],
                "client_id": m["client_id"],
                "host": m["host"],
                "assignment": [{"topic": t, "partition": p} for t, p in m["assignment"]],
                "target_assignment": None,
            }
            for m in described["members"]
        ],
        "total_lag": sum(p["lag"] for p in partitions if p["lag"] is not None),
        "partitions": partitions,
    }


def committed_offsets(conn: Connection, group_id: str) -> dict[Partition, int]:
    """(topic, partition) -> committed offset, for every partition the group committed."""
    request = [ConsumerGroupTopicPartitions(group_id)]
    future = conn.admin().list_consumer_group_offsets(request, request_timeout=conn.timeout)[group_id]
    found = result(future, f"fetch the committed offsets of group {group_id!r}")
    return {(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions if tp.offset >= 0}


def describe_one(conn: Connection, group_id: str) -> ConsumerGroupDescription | None:
    """The group's state, coordinator and members; an unknown group is described as Dead;
    None for a share group (confluent-kafka describes only consumer groups)."""
    return _describe_all(conn, [group_id])[group_id]


def commit_offsets(conn: Connection, group_id: str, plan: dict[Partition, int]) -> None:
    """Commit these offsets for the group (Kafka refuses while it has active members)."""
    request = ConsumerGroupTopicPartitions(group_id, [TopicPartition(t, p, o) for (t, p), o in plan.items()])
    future = conn.admin().alter_consumer_group_offsets([request], request_timeout=conn.timeout)[group_id]
    done = result(future, f"reset the offsets of group {group_id!r}")
    failed = next((tp.error for tp in done.topic_partitions if tp.error is not None), None)
    if failed is not None:
        error = from_kafka(failed, f"reset the offsets of group {group_id!r}")
        if error.code == ExitCode.CONFLICT:
            error.message += " (the group has active members again)"
        raise error


def delete(conn: Connection, group_id: str) -> None:
    """Delete a group and its committed offsets (Kafka refuses while it has active members)."""
    future = conn.admin().delete_consumer_groups([group_id], request_timeout=conn.timeout)[group_id]
    result(future, f"delete group {group_id!r}")


def _describe_all(conn: Connection, ids: list[str]) -> dict[str, ConsumerGroupDescription | None]:
    if not ids:
        return {}
    futures = conn.admin().describe_consumer_groups(ids, request_timeout=conn.timeout)
    return {group_id: _description(future, group_id) for group_id, future in futures.items()}


def _description(future: Future, group_id: str) -> ConsumerGroupDescription | None:
    """librdkafka refuses a group whose protocol type is not "consumer" with _INVALID_ARG
    ("is not a consumer group (share)"): None then, for the caller to ask for a share group."""
    try:
        return future.result()
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError._INVALID_ARG:
            return None
    return result(future, f"describe group {group_id!r}")


def _partition_row(
    key: Partition,
    committed: int | None,
    start: int | None,
    stable: int | None,
    end: int | None,
    owner: MemberDescription | None,
) -> dict:
    lag = None if committed is None or end is None else max(0, end - committed)
    return {
        "topic": key[0],
        "partition": key[1],
        "committed_offset": committed,
        "log_start_offset": start,
        "high_watermark": end,
        "lag": lag,
        "last_stable_offset": stable,
        "member_id": owner.member_id if owner else None,
        "client_id": owner.client_id if owner else None,
        "host": owner.host if owner else None,
    }


def _protocol_type(description: ConsumerGroupDescription) -> str | None:
    """'consumer' for groups of subscribing consumers; None for offsets-only (simple) groups."""
    return None if description.is_simple_consumer_group else "consumer"


def _coordinator(description: ConsumerGroupDescription) -> dict | None:
    node = description.coordinator
    if node is None or node.id < 0:
        return None
    return {"id": node.id, "host": node.host, "port": node.port}
