"""`kctl topic create|list|describe|producers|delete|delete-records|alter-config|add-partitions|reassign|
elect-leaders|segments`."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from kctl.cluster import localcluster
from kctl.kafka import topics
from kctl.kafka.client import ClusterMetadata, connect, fetch_metadata, find_topic
from kctl.kafka.configs import DEFAULT_SOURCE
from kctl.schema.topicsubjects import rows, topic_subjects
from kctl.shell import console, sections
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.console import Cell
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.keyvalue import parse_pairs
from kctl.shell.options import (
    ClusterDir,
    Json,
    SchemaRegistryUrl,
)
from kctl.topic import deleterecords, topicinfo
from kctl.topic import producers as producerstate
from kctl.topic.reassign import parse_replicas, read_plan

if TYPE_CHECKING:  # kafka-python's admin client: imported by `topic reassign` alone
    from kctl.kafka import reassignments


class Election(str, Enum):
    preferred = "preferred"
    unclean = "unclean"


ELECTION_NEEDS = {
    Election.preferred: "is it alive and in the ISR?",
    Election.unclean: "is any of its replicas alive?",
}


OnlyPartitions = Annotated[
    list[int] | None,
    typer.Option(
        "--partition",
        "-p",
        metavar="N",
        min=0,
        show_default=False,
        help="Only this partition (repeatable). Default: every partition of the topic.",
    ),
]

app = typer.Typer(help="Create, list, describe, delete and configure topics.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(metavar="NAME", help="Topic name.", show_default=False)]


@app.command()
@connection_options()
def create(
    name: Name,
    partitions: Annotated[
        int, typer.Option("--partitions", "-p", help="Number of partitions; -1: the broker's num.partitions.")
    ] = -1,
    replicas: Annotated[
        int,
        typer.Option(
            "--replicas", "-r", help="Replication factor; -1: the broker's default.replication.factor."
        ),
    ] = -1,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            "-c",
            metavar="KEY=VALUE",
            show_default=False,
            help="Topic config, e.g. -c cleanup.policy=compact (repeatable).",
        ),
    ] = None,
    if_not_exists: Annotated[
        bool, typer.Option("--if-not-exists", help="Succeed when the topic already exists.")
    ] = False,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Create a topic."""
    if partitions == 0 or partitions < -1 or replicas == 0 or replicas < -1:
        raise KctlError(
            "partitions and replicas must be positive (or -1 for the broker default)", ExitCode.INVALID_INPUT
        )
    configs = dict(parse_pairs(config, "--config"))
    conn = connect(options)
    created = topics.create(conn, name, partitions, replicas, configs, if_not_exists)
    status = "created" if created else "exists"
    if json_output:
        console.print_json({"topic": name, "status": status})
    else:
        console.print_table(["topic", "status"], [[name, Text(status, style="green")]])


@app.command("list")
@connection_options()
def list_topics(
    internal: Annotated[
        bool, typer.Option("--internal", "-i", help="Include internal topics (names starting with __).")
    ] = False,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """List topics with their partition count and replication factor."""
    conn = connect(options)
    metadata = fetch_metadata(conn.admin(), conn)
    rows: list[dict[str, str | int]] = []
    for name, meta in sorted(metadata.topics.items()):
        if name.startswith("__") and not internal:
            continue
        first = meta.partitions.get(0)
        rows.append(
            {
                "name": name,
                "partitions": len(meta.partitions),
                "replication_factor": len(first.replicas) if first else 0,
            }
        )
    if json_output:
        console.print_json(rows)
    else:
        console.print_table(
            ["name", "partitions", "replicas"],
            [[r["name"], r["partitions"], r["replication_factor"]] for r in rows],
        )


@app.command()
@connection_options()
def describe(
    name: Name,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
    all_configs: Annotated[
        bool,
        typer.Option("--all-configs", help="List every config, defaults too (--json always does)."),
    ] = False,
    registry: SchemaRegistryUrl = None,
) -> None:
    """Show each partition's leader, epoch, replicas, ISR, offsets and open transactions.

    SCHEMAS names the subjects the topic's keys and values are registered under in the schema
    registry (TOPIC-key, TOPIC-value, as Confluent's serializers name them), when one is known.

    CONFIGS lists the configs that differ from their defaults (set on the topic, or by a
    broker setting), as kafka-topics --describe does; --all-configs lists them all.

    Offsets: log start, last stable offset (LSO: where read_committed consumers stop; below
    the high watermark while a transaction is open), high watermark, each replica's log end.
    Replicas outside the ISR are red, replicas whose log end is below the high watermark are
    yellow, and a partition without a leader (offline) shows leader "none".
    Per-replica log end offsets, leader epochs and open transactions (producer id:epoch@first
    offset) come from the local cluster's state directory; against another cluster only the
    leader's end (its high watermark) is known, and open transactions show as "-" (null).
    """
    conn = connect(options)
    doc = topicinfo.describe(conn, name)
    subjects = topic_subjects(name, registry, options.bootstrap, options.cluster_dir)
    if subjects is not None:
        doc["schemas"] = subjects
    if json_output:
        console.print_json(doc)
        return
    parts = doc["partitions"]
    rf = len(parts[0]["replicas"]) if parts else 0
    console.print_table(
        ["key", "value"],
        [["name", name], ["partitions", len(parts)], ["replication factor", rf]],
        title="SUMMARY",
    )
    if doc["configs"] is not None:
        shown = {k: c for k, c in doc["configs"].items() if all_configs or c["source"] != DEFAULT_SOURCE}
        if shown or all_configs:
            console.print_table(
                ["key", "value", "source"],
                [[k, c["value"], c["source"]] for k, c in shown.items()],
                title="CONFIGS",
            )
        else:
            console.print_title("CONFIGS: all defaults (--all-configs lists them)")
    if subjects and any(subjects.values()):
        console.print_table(["of", "subject", "version", "id", "type"], rows(subjects), title="SCHEMAS")
    console.print_section(sections.partitions("PARTITIONS", parts))


@app.command()
@connection_options()
def producers(
    name: Name,
    partition: OnlyPartitions = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Show the idempotent and transactional producers each partition remembers (KIP-664).

    An idempotent producer numbers its batches per partition; the leader remembers each
    producer's last sequence, so a batch resent after a lost acknowledgement is dropped
    instead of written twice. The producer epoch fences zombies: a producer restarted under
    the same transactional.id gets a higher epoch, and writes from the old one are refused.
    The same columns as `kafka-transactions.sh describe-producers`: the coordinator epoch of
    the last transaction marker, the last write's time (UTC), and the first offset of an open
    transaction, which holds the last stable offset back ("-" when none). Partitions without
    a leader are left out, and the command then fails (exit 3).
    """
    conn = connect(options)
    rows, failure = producerstate.describe(conn, name, partition)
    if json_output:
        console.print_json(rows)
    else:
        console.print_table(producerstate.COLUMNS, [producerstate.cells(r) for r in rows])
    if failure is not None:
        raise failure


@app.command()
@connection_options()
def delete(
    name: Name,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Delete a topic and all its records."""
    topics.delete(connect(options), name)
    console.info(f"Deleted topic {name}.")


@app.command("delete-records")
@connection_options()
def delete_records(
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="Topic name (not with --offset-json-file).", show_default=False),
    ] = None,
    partition: OnlyPartitions = None,
    offset: Annotated[
        str | None,
        typer.Option(
            "--offset",
            metavar="N",
            show_default=False,
            help="Delete the records before offset N; -1 or end: every record (up to the high watermark).",
        ),
    ] = None,
    offset_json_file: Annotated[
        Path | None,
        typer.Option(
            "--offset-json-file",
            metavar="FILE",
            show_default=False,
            dir_okay=False,
            help="kafka-delete-records.sh's offsets file instead of NAME, --partition and --offset: "
            + deleterecords.FILE_FORMAT
            + ".",
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Delete the records before an offset: the log start offset (low watermark) moves up to it.

    Consumers can no longer read below the new log start, and segments wholly below it are
    removed; the replicas follow their leader. Prints each partition's new low watermark.
    An offset past the high watermark is refused (OFFSET_OUT_OF_RANGE, exit 5).
    Examples: `kctl topic delete-records orders --offset 100 -p 0`,
    `kctl topic delete-records orders --offset end`,
    `kctl topic delete-records --offset-json-file offsets.json`.
    """
    requested = _records_to_delete(name, partition, offset, offset_json_file)
    conn = connect(options)
    metadata = fetch_metadata(conn.admin(), conn)
    low, failure = topics.delete_records(conn, metadata, requested(metadata))
    rows: list[dict[str, str | int]] = [
        {"topic": t, "partition": p, "low_watermark": o} for (t, p), o in sorted(low.items())
    ]
    if json_output:
        console.print_json(rows)
    elif rows:
        console.print_table(
            ["topic", "partition", "low-watermark"],
            [[r["topic"], r["partition"], r["low_watermark"]] for r in rows],
        )
    if failure is not None:
        raise failure


def _records_to_delete(
    name: str | None, partition: list[int] | None, offset: str | None, offset_file: Path | None
) -> Callable[[ClusterMetadata], deleterecords.Cuts]:
    """Check the command line before connecting; the partitions to cut at which offset then
    come from the cluster's metadata (every partition of the topic unless --partition)."""
    if offset_file is not None:
        if name is not None or partition or offset is not None:
            raise KctlError("--offset-json-file replaces NAME, --partition and --offset", ExitCode.USAGE)
        cuts = deleterecords.read_offsets_file(offset_file)
        return lambda _metadata: cuts
    if name is None or offset is None:
        raise KctlError("give a topic and --offset N, or --offset-json-file FILE", ExitCode.USAGE)
    cut_at = deleterecords.parse_offset(offset)
    return lambda metadata: deleterecords.for_topic(metadata, name, partition, cut_at)


@app.command("alter-config")
@connection_options()
def alter_config(
    name: Name,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", "-s", metavar="KEY=VALUE", show_default=False, help="Set a config (repeatable)."
        ),
    ] = None,
    delete_: Annotated[
        list[str] | None,
        typer.Option(
            "--delete",
            "-d",
            metavar="KEY",
            show_default=False,
            help="Remove a config override, back to the default (repeatable).",
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Change topic configs incrementally; configs not named stay as they are."""
    to_set, to_delete = parse_pairs(set_, "--set"), delete_ or []
    if not to_set and not to_delete:
        raise KctlError("nothing to change: give --set KEY=VALUE and/or --delete KEY", ExitCode.USAGE)
    topics.alter_configs(connect(options), name, to_set, to_delete)
    summary = [f"{k}={v}" for k, v in to_set] + [f"-{k}" for k in to_delete]
    console.info(f"Updated configs of {name}: {' '.join(summary)}")


@app.command("add-partitions")
@connection_options()
def add_partitions(
    name: Name,
    partitions: Annotated[
        int,
        typer.Option(
            "--partitions",
            "-p",
            show_default=False,
            help="The new total number of partitions; must be larger than the current one.",
        ),
    ],
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Grow a topic to N partitions in total; Kafka never shrinks a topic.

    Keyed records hash over the new count from now on, so a key may land in another
    partition than before: order per key holds only within each partition.
    """
    conn = connect(options)
    current = len(find_topic(fetch_metadata(conn.admin(), conn), topics.validate_name(name)).partitions)
    if partitions <= current:
        raise KctlError(
            f"topic {name!r} already has {current} partition(s); -p must be larger "
            "(partitions can only be added)",
            ExitCode.INVALID_INPUT,
        )
    topics.add_partitions(conn, name, partitions)
    console.info(f"Topic {name} now has {partitions} partitions (was {current}).")


@app.command()
@connection_options()
def reassign(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME", help="Topic name (with --partition and --replicas).", show_default=False
        ),
    ] = None,
    partition: Annotated[
        int | None, typer.Option("--partition", min=0, show_default=False, help="The partition to move.")
    ] = None,
    replicas: Annotated[
        str | None,
        typer.Option(
            "--replicas",
            metavar="ID,ID,...",
            show_default=False,
            help="The new replica set; the first broker is the preferred leader.",
        ),
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            metavar="FILE",
            show_default=False,
            help='A kafka-reassign-partitions.sh plan: {"version":1,"partitions":[{"topic":..,'
            '"partition":..,"replicas":[..]}]}.',
        ),
    ] = None,
    cancel: Annotated[
        bool,
        typer.Option("--cancel", help="Cancel the ongoing reassignment(s): back to the original replicas."),
    ] = False,
    list_: Annotated[bool, typer.Option("--list", help="List ongoing reassignments.")] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="Wait until the reassignment is done, showing replicas being added and removed."
        ),
    ] = False,
    wait_timeout: Annotated[
        float,
        typer.Option(
            "--wait-timeout", metavar="SECONDS", min=0.1, help="Give up waiting (exit 3) after this long."
        ),
    ] = 300.0,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Move partition replicas to other brokers (KIP-455), or list or cancel such moves.

    New replicas are added and catch up from the leader while the old ones keep serving;
    once every new replica is in the ISR the removed ones are dropped, so no acknowledged
    record is lost. Examples: `kctl topic reassign orders --partition 0 --replicas 3,1 --wait`,
    `kctl topic reassign --plan plan.json`, `kctl topic reassign orders --cancel`,
    `kctl topic reassign --list`.
    """
    from kctl.kafka import reassignments

    conn = connect(options)
    if list_:
        if any(x is not None for x in (name, partition, replicas, plan)) or cancel:
            raise KctlError(
                "--list takes no topic, --partition, --replicas, --plan or --cancel", ExitCode.USAGE
            )
        _print_ongoing(reassignments.ongoing(conn), json_output)
        return
    moves = _requested_moves(conn, name, partition, replicas, plan, cancel)
    reassignments.alter(conn, moves)
    what = "Cancelled" if cancel else "Started"
    console.info(
        f"{what} reassignment of {len(moves)} partition(s): "
        + ", ".join(
            f"{t}/{p}" + (f" -> {','.join(map(str, r))}" if r else "") for (t, p), r in sorted(moves.items())
        )
    )
    if wait:
        reassignments.wait(conn, set(moves), wait_timeout, _show_progress)
        console.info("Reassignment complete.")


def _requested_moves(
    conn, name: str | None, partition: int | None, replicas: str | None, plan: Path | None, cancel: bool
) -> reassignments.Plan:
    """The partitions to move (or, with --cancel, to put back) from the command line."""
    if plan is not None:
        if name or partition is not None or replicas:
            raise KctlError("--plan replaces NAME, --partition and --replicas", ExitCode.USAGE)
        moves = read_plan(plan)
        return {k: None for k in moves} if cancel else moves
    if name is None:
        raise KctlError(
            "give a topic with --partition and --replicas, --plan FILE, or --list", ExitCode.USAGE
        )
    if cancel:
        if replicas:
            raise KctlError("--cancel takes no --replicas", ExitCode.USAGE)
        from kctl.kafka import reassignments

        keys = [
            k
            for k in reassignments.ongoing(conn)
            if k[0] == name and (partition is None or k[1] == partition)
        ]
        if not keys:
            raise KctlError(
                f"no reassignment in progress for {name}" + ("" if partition is None else f"/{partition}"),
                ExitCode.CONFLICT,
            )
        return {k: None for k in keys}
    if partition is None or not replicas:
        raise KctlError("moving a partition needs --partition P and --replicas ID,ID,...", ExitCode.USAGE)
    return {(name, partition): parse_replicas(replicas)}


def _show_progress(pending: dict) -> None:
    """One line per partition still moving: what is being added and removed."""
    for (t, p), doc in sorted(pending.items()):
        console.info(
            f"  {t}/{p}: replicas {doc['replicas']}, adding {doc['adding_replicas']}, "
            f"removing {doc['removing_replicas']}"
        )


def _print_ongoing(listed: dict, json_output: bool) -> None:
    rows = [{"topic": t, "partition": p, **doc} for (t, p), doc in sorted(listed.items())]
    if json_output:
        console.print_json(rows)
    else:
        console.print_table(
            ["topic", "partition", "replicas", "adding", "removing"],
            [
                [
                    r["topic"],
                    r["partition"],
                    ",".join(map(str, r["replicas"])),
                    ",".join(map(str, r["adding_replicas"])),
                    ",".join(map(str, r["removing_replicas"])),
                ]
                for r in rows
            ],
        )


@app.command("elect-leaders")
@connection_options()
def elect_leaders(
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME", help="Topic name; default: every partition of the cluster.", show_default=False
        ),
    ] = None,
    election_type: Annotated[
        Election,
        typer.Option(
            "--election-type",
            case_sensitive=False,
            help="preferred: back to the first replica if it is in sync. unclean: a partition "
            "whose in-sync replicas are all gone gets a live out-of-sync leader; what only "
            "they had is lost.",
        ),
    ] = Election.preferred,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Elect leaders as kafka-leader-election.sh does: preferred (the default) or unclean.

    After a broker restart or a reassignment, leadership piles up on the brokers that stayed;
    a preferred election spreads it again as the replica lists intend. An unclean election
    brings an offline partition back at the price of the records only its lost in-sync
    replicas had (Kafka's unclean.leader.election.enable, once, by hand).
    """
    conn = connect(options)
    rows: list[list[Cell]] = []
    failed: list[KctlError] = []
    for election in topics.elect_leaders(conn, election_type is Election.unclean, name):
        if election.error is not None:
            status = election.error.message
            failed.append(election.error)
        elif not election.needed:
            status = (
                "already led by its preferred leader"
                if election_type is Election.preferred
                else "has a live leader"
            )
        else:
            status = "elected"
        rows.append([election.topic, election.partition, status])
    console.print_table(["topic", "partition", "result"], rows)
    if failed:
        raise KctlError(
            f"{len(failed)} partition(s) could not get a {election_type.value} leader "
            f"({ELECTION_NEEDS[election_type]})",
            failed[0].code,
        )


@app.command()
def segments(
    name: Name,
    partition: Annotated[
        int | None,
        typer.Option("--partition", "-p", min=0, show_default=False, help="Only this partition."),
    ] = None,
    cluster_dir: ClusterDir = None,
    json_output: Json = False,
) -> None:
    """List the segment files behind each replica of a topic in the local cluster.

    Kafka keeps a partition as segments named by their base offset (the first offset they
    hold): NNNN.log with the record batches, NNNN.index (offset -> file position),
    NNNN.timeindex (timestamp -> offset) and NNNN.txnindex (aborted transactions). Only the
    last, active segment takes appends; older ones are deleted or compacted whole. The
    active segment's files are preallocated for mmap, so "log bytes" (the record batches
    it holds) is smaller than its file sizes (in bytes; "-" for a file that does not exist).
    """
    from kctl.topic import segments as segfiles  # reads record batches with brokerd's storage code

    state = localcluster.existing(cluster_dir)
    rows = segfiles.list_segments(state, topics.validate_name(name), partition)
    if not rows:
        raise KctlError(
            f"no replica of topic {name!r}"
            + ("" if partition is None else f" partition {partition}")
            + f" in {state.cluster_dir}",
            ExitCode.NOT_FOUND,
        )
    if json_output:
        console.print_json(rows)
        return
    console.print_table(
        [
            "partition",
            "broker",
            "base offset",
            "next offset",
            "log bytes",
            "log file",
            "index file",
            "timeindex file",
            "txnindex file",
        ],
        [
            [
                r["partition"],
                r["broker"],
                r["base_offset"],
                r["next_offset"],
                r["log_bytes"],
                r["log_file_bytes"],
                r["index_file_bytes"],
                r["timeindex_file_bytes"],
                r["txnindex_file_bytes"],
            ]
            for r in rows
        ],
    )
