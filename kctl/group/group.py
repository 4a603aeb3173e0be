"""`kctl group list|describe|reset-offsets|delete`: consumer groups, as rpk and
kafka-consumer-groups.sh show them."""

from __future__ import annotations

import time
from enum import Enum
from typing import Annotated

import typer

from kctl.group import offsetreset
from kctl.group.offsetreset import Current, Kind, Strategy
from kctl.kafka import groups, offsets
from kctl.kafka.client import Connection, checked, connect, fetch_metadata, find_topic
from kctl.shell import console, sections
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import (
    Json,
    parse_partitions,
)

app = typer.Typer(help="List, describe, reset and delete consumer groups.", no_args_is_help=True)

Group = Annotated[str, typer.Argument(metavar="GROUP", help="Consumer group id.", show_default=False)]
Partition = tuple[str, int]


class GroupType(str, Enum):
    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"


@app.command("list")
@connection_options()
def list_groups(
    group_type: Annotated[
        GroupType | None,
        typer.Option(
            "--type",
            show_default=False,
            help="Only groups of this type: 'classic' (JoinGroup/SyncGroup), 'consumer' "
            "(KIP-848, group.protocol=consumer) or 'share' (KIP-932 share groups, queues).",
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """List consumer and share groups with their type, state, protocol type, coordinator and
    member count."""
    conn = checked(connect(options))
    rows = groups.list_groups(conn, None if group_type is None else group_type.value)
    if json_output:
        console.print_json(rows)
        return
    console.print_table(
        ["group", "type", "state", "protocol-type", "coordinator", "members"],
        [
            [
                r["group"],
                r["type"],
                r["state"],
                r["protocol_type"],
                sections.node(r["coordinator"]),
                r["members"],
            ]
            for r in rows
        ],
    )


@app.command()
@connection_options()
def describe(
    group: Group,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Show a group's coordinator, state, members and total lag, then per partition the
    committed offset, log start, last stable offset, high watermark (log end), lag and the
    member reading it.

    Lag is the high watermark minus the committed offset, as kafka-consumer-groups.sh counts
    it: the records the group has not committed yet. Partitions with lag are yellow. The last
    stable offset (LSO) is where read_committed consumers (kctl's default) stop; it is below
    the high watermark, in yellow, while a transaction is open, and lag above it is records
    the group cannot read until that transaction ends, not records it missed.

    A KIP-848 group (type consumer) also shows its group epoch (bumped by each join, leave
    or subscription change), the epoch of its target assignment, and per member its member
    epoch, its partitions and, while the broker is still moving partitions to or from it,
    its target assignment. A share group (type share) shows its members with their epochs
    and assignments (members share partitions), and per partition the share-partition start
    offset (every record below it is acknowledged or archived) and the lag, the high
    watermark minus that start offset. Which records are in flight (acquired, with their
    delivery counts) is not told by Kafka's admin APIs: a member sees a record's delivery
    count (kctl consume --share-group -f %d), and kctl watch -g G narrates the deliveries,
    releases, rejections and lock expiries each partition's leader counts.
    """
    conn = checked(connect(options))
    doc = groups.describe(conn, group)
    if json_output:
        console.print_json(doc)
        return
    console.print_section(sections.group_summary(doc))
    if doc["type"] in ("consumer", "share"):
        console.print_section(sections.group_members(doc))
    console.print_section(sections.group_partitions(doc))


@app.command("reset-offsets")
@connection_options()
def reset_offsets(
    group: Group,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="To the log start.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="To the high watermark.")] = False,
    to_offset: Annotated[
        int | None,
        typer.Option("--to-offset", metavar="N", show_default=False, help="To offset N on every partition."),
    ] = None,
    shift_by: Annotated[
        int | None,
        typer.Option(
            "--shift-by",
            metavar="N",
            show_default=False,
            help="Move the committed offset by N (negative: back, to read records again).",
        ),
    ] = None,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            metavar="T",
            show_default=False,
            help="To the first record at or after T: 13-digit ms, 10-digit s, YYYY-MM-DD, "
            "YYYY-MM-DDTHH:MM:SS, RFC3339, or a duration before now such as -10m.",
        ),
    ] = None,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC[:P,...]",
            show_default=False,
            help="Only these topics (and partitions) (repeatable). Default: every partition the "
            "group has committed offsets for.",
        ),
    ] = None,
    execute: Annotated[
        bool, typer.Option("--execute", help="Commit the new offsets. Without it, only print the plan.")
    ] = False,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Plan, and with --execute commit, new offsets for a group: prior offset -> new offset.

    Without --execute nothing changes (a dry run, as kafka-consumer-groups.sh). New offsets
    stay within [log start, high watermark]. Refused (exit 6) while the group has active
    members: stop its consumers first.
    """
    strategy = offsetreset.choose(
        to_earliest, to_latest, to_offset, shift_by, to_datetime, int(time.time() * 1000)
    )
    scopes = [_parse_scope(t) for t in topic or []]
    conn = checked(connect(options))
    _require_empty(conn, group, "reset its offsets")
    committed = groups.committed_offsets(conn, group)
    keys = _selected(conn, group, scopes, committed)
    plan = _plan(conn, strategy, keys, committed)
    if execute:
        groups.commit_offsets(conn, group, plan)
    _print_plan(group, strategy, plan, committed, execute, json_output)
    if execute:
        console.info(f"Committed new offsets for {len(plan)} partition(s) of group {group}.")
    else:
        console.warn("dry run: nothing changed; add --execute to commit these offsets")


def _parse_scope(text: str) -> tuple[str, list[int] | None]:
    name, sep, parts = text.partition(":")
    if not name or (sep and not parts):
        raise KctlError(f"invalid --topic {text!r}: expected TOPIC or TOPIC:P[,P...]", ExitCode.INVALID_INPUT)
    return name, parse_partitions([parts]) if sep else None


def _selected(
    conn: Connection, group: str, scopes: list[tuple[str, list[int] | None]], committed: dict
) -> list[Partition]:
    """The partitions to reset: those named by --topic, else those the group committed."""
    if not scopes:
        if not committed:
            raise KctlError(
                f"group {group!r} has no committed offsets: name the partitions with --topic TOPIC[:P,...]",
                ExitCode.NOT_FOUND,
            )
        return sorted(committed)
    metadata = fetch_metadata(conn.admin(), conn)
    keys = set()
    for name, wanted in scopes:
        available = sorted(find_topic(metadata, name).partitions)
        for p in wanted if wanted is not None else available:
            if p not in available:
                raise KctlError(f"topic {name!r} has no partition {p}", ExitCode.NOT_FOUND)
            keys.add((name, p))
    return sorted(keys)


def _plan(
    conn: Connection, strategy: Strategy, keys: list[Partition], committed: dict[Partition, int]
) -> dict[Partition, int]:
    starts = offsets.log_starts(conn, keys)
    ends = offsets.high_watermarks(conn, keys)
    times = {}
    if strategy.kind is Kind.DATETIME:
        times = offsets.offsets_for_time(conn, keys, strategy.value)
    return {
        key: offsetreset.new_offset(
            strategy, Current(key[0], key[1], committed.get(key), starts[key], ends[key], times.get(key))
        )
        for key in keys
    }


def _print_plan(
    group: str,
    strategy: Strategy,
    plan: dict[Partition, int],
    committed: dict[Partition, int],
    executed: bool,
    json_output: bool,
) -> None:
    if json_output:
        console.print_json(
            {
                "group": group,
                "strategy": strategy.kind.value,
                "executed": executed,
                "partitions": [
                    {"topic": t, "partition": p, "prior_offset": committed.get((t, p)), "new_offset": o}
                    for (t, p), o in plan.items()
                ],
            }
        )
        return
    console.print_table(
        ["group", "topic", "partition", "prior-offset", "new-offset"],
        [[group, t, p, committed.get((t, p)), o] for (t, p), o in plan.items()],
    )


@app.command()
@connection_options()
def delete(
    group: Group,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Delete a group and its committed offsets; refused (exit 6) while it has active members."""
    conn = checked(connect(options))
    _require_empty(conn, group, "delete it")
    groups.delete(conn, group)
    console.info(f"Deleted group {group}.")


def _require_empty(conn: Connection, group: str, doing: str) -> None:
    """Kafka refuses to move or delete the offsets of a group whose consumers are running."""
    if not group:
        raise KctlError("the group id must not be empty", ExitCode.INVALID_INPUT)
    description = groups.describe_one(conn, group)
    if description is None:
        raise KctlError(
            f"group {group!r} is a share group: kctl group cannot {doing} (consumer groups only)",
            ExitCode.INVALID_INPUT,
        )
    if description.members:
        state = groups.state_name(description)
        raise KctlError(
            f"group {group!r} has {len(description.members)} active member(s) "
            f"(state {state}): stop its consumers to {doing}",
            ExitCode.CONFLICT,
        )
