"""`kctl consume TOPIC`: records to stdout, formatted like kcat/rpk or as JSON lines."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from kctl.consume import schemadecoding
from kctl.consume.assignment import plan
from kctl.consume.filters import FilterSyntaxError, Test, compile_filters
from kctl.consume.formatting import (
    DEFAULT_FORMAT,
    FormatError,
    compile_format,
    record_json,
    shared_record_json,
)
from kctl.consume.interrupts import Interrupts
from kctl.consume.membership import (
    GroupProtocol,
    Membership,
    RemoteAssignor,
    group_settings,
    reset_policy,
)
from kctl.consume.reader import Commit, Reader, Render
from kctl.consume.share import ShareReader
from kctl.kafka.client import Connection, connect, fetch_metadata, find_topic
from kctl.kafka.consumer import ClusterWatch
from kctl.kafka.share import Ack, share_consumer
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import OffsetRange, OffsetSyntaxError, parse
from kctl.shell.options import (
    Isolation,
    SchemaRegistryUrl,
    parse_partitions,
)


@connection_options()
def consume(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to consume from.", show_default=False)],
    offset: Annotated[
        str,
        typer.Option(
            "--offset",
            "-o",
            metavar="OFFSET",
            help="Where to start (and stop): start, end, N, +N, -N (per partition), A:B, :end, "
            "@TIMESTAMP, @T1:T2, @-10m:end. Timestamps: 13-digit ms, 10-digit s, "
            "YYYY-MM-DD, RFC3339, or a duration before now.",
        ),
    ] = "start",
    count: Annotated[
        int | None,
        typer.Option(
            "--num",
            "-n",
            min=1,
            show_default=False,
            help="Stop after this many records in total (over all partitions).",
        ),
    ] = None,
    partition: Annotated[
        list[str] | None,
        typer.Option(
            "--partition",
            "-p",
            metavar="P[,P...]",
            show_default=False,
            help="Only these partitions (repeatable or comma-separated). Default: all.",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="Output format: %t topic, %p partition, %o offset, %k key, %v or %s value, "
            "%T timestamp ms, %h headers, %K/%S key/value length, %d delivery count (with "
            "--share-group), %%; escapes \\n \\t \\\\.",
        ),
    ] = DEFAULT_FORMAT,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per record: topic, partition, offset, timestamp, key, "
            "value, headers (and delivery_count with --share-group); lossless, so `kctl "
            "produce -J json` reads it back (see below).",
        ),
    ] = False,
    filters: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            metavar="EXPR",
            show_default=False,
            help="Print only records that match (repeatable; all must match): key=TEXT, key~REGEX, "
            "value=TEXT, value~REGEX, header.NAME=TEXT, header.NAME~REGEX, header.NAME (present). "
            "Records filtered out still count as read: -e, ranges and group commits pass them.",
        ),
    ] = None,
    exit_at_end: Annotated[
        bool, typer.Option("--exit", "-e", help="Exit at the end of every partition, as it was at start.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No messages on stderr: no summary, no rebalance lines.")
    ] = False,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            show_default=False,
            help="Join this consumer group: the group shares the partitions among its members and "
            "remembers committed offsets; rebalances are reported on stderr. -o start|end is "
            "where a group without committed offsets begins.",
        ),
    ] = None,
    group_protocol: Annotated[
        GroupProtocol | None,
        typer.Option(
            "--group-protocol",
            show_default=False,
            help="With -g: 'classic' (the default) rebalances by JoinGroup/SyncGroup; 'consumer' "
            "uses KIP-848 (group.protocol=consumer): the broker assigns and moves partitions "
            "incrementally, and the session timeout is the broker's or the group's config.",
        ),
    ] = None,
    remote_assignor: Annotated[
        RemoteAssignor | None,
        typer.Option(
            "--remote-assignor",
            show_default=False,
            help="With --group-protocol consumer: the broker's assignor (group.remote.assignor), "
            "'uniform' (spread evenly) or 'range' (co-partitioned topics together). Default: "
            "the broker's first of group.consumer.assignors.",
        ),
    ] = None,
    commit: Annotated[
        Commit | None,
        typer.Option(
            "--commit",
            show_default=False,
            help="With -g: 'after' (the default) commits records once written and flushed "
            "(at-least-once), 'before' commits before writing (at-most-once), 'never' leaves "
            "the group's offsets alone.",
        ),
    ] = None,
    share_group: Annotated[
        str | None,
        typer.Option(
            "--share-group",
            "-G",
            metavar="GROUP",
            show_default=False,
            help="Join this share group (KIP-932, a queue): its members share every partition, "
            "the brokers hand each record to one member at a time, and a record is delivered "
            "again unless it is acknowledged (see --ack) before its lock expires. Where a new "
            "share group starts is the group's share.auto.offset.reset (latest).",
        ),
    ] = None,
    ack: Annotated[
        Ack,
        typer.Option(
            "--ack",
            help="With --share-group: how each record printed is acknowledged. 'accept' (done "
            "with), 'release' (delivered again, to any member, with its delivery count raised) "
            "or 'reject' (never delivered again).",
        ),
    ] = Ack.ACCEPT,
    isolation: Annotated[
        Isolation,
        typer.Option(
            "--isolation",
            help="read_committed (the default, as in librdkafka and kcat) shows records of "
            "transactions once committed and never those of aborted ones, and stops at the "
            "last stable offset (the first record of a still open transaction); "
            "read_uncommitted shows every record as soon as it is written.",
        ),
    ] = Isolation.READ_COMMITTED,
    decode: schemadecoding.DecodeOption = schemadecoding.Decode.AUTO,
    registry: SchemaRegistryUrl = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Print records of a topic; follows new records like `tail -f` unless -e, -n or a range ends it.

    With -g, a clean exit (Ctrl-C, or -n reached) leaves the group at once, so the other
    members take over its partitions; a killed member's partitions move after the session
    timeout (10 s; -X session.timeout.ms=...). With read_committed (the default), -e and
    offsets relative to the end mean the last stable offset. Ends with "Processed a total of N messages"
    on stderr (unless -q).

    --json writes one line per record, e.g. {"topic": "a", "partition": 0, "offset": 7,
    "timestamp": 1700000000123, "key": "k", "value": "AAH/", "value_encoding": "base64",
    "headers": [{"key": "h", "value": "v"}]}. Keys, values and header values are text when
    their bytes are UTF-8, null when null, and otherwise base64, with "key_encoding":
    "base64" or "value_encoding": "base64" beside them (in the header's object for a
    header). Headers are a list, in order, repeated names included. So
    `kctl consume a --json -e | kctl produce b -J json` copies a topic, byte for byte,
    partitions and timestamps included.

    --share-group G makes this a member of share group G (KIP-932, queues for Kafka): members
    share every partition of the topic and each record goes to one of them at a time. Every
    record printed is acknowledged once written (--ack accept, the default; release or
    reject), so a member that dies leaves its records to the others after their lock expires.

    Records written with a schema registry's schemas (Confluent's wire format, e.g. by
    `kctl produce --value-schema` or confluent-kafka's serializers) show as JSON when a
    registry is known; --json keeps the bytes lossless and adds "value_schema_id" and
    "value_decoded" ("key_*" alike). --decode none shows the bytes.
    """
    spec, render, keep = _compile(offset, fmt, json_output, filters or [], share_group is not None)
    if decode is schemadecoding.Decode.AUTO:
        decoder = schemadecoding.schema_decoder(registry, options)
        render = schemadecoding.decoding(render, decoder, json_output, share_group is not None)
    if share_group is not None:
        _check_share_options(group, commit, partition, offset, exit_at_end)
        if group_protocol is not None or remote_assignor is not None:
            raise KctlError(
                "--share-group does not go with --group-protocol or --remote-assignor: a share "
                "group has its own protocol",
                ExitCode.USAGE,
            )
        _consume_shared(
            topic,
            share_group,
            ack,
            render,
            keep,
            count,
            quiet,
            options,
        )
        return
    partitions = parse_partitions(partition)
    if group is None and commit is not None:
        raise KctlError("--commit needs -g GROUP: only a group has offsets to commit", ExitCode.USAGE)
    if group is None and group_protocol is not None:
        raise KctlError("--group-protocol needs -g GROUP", ExitCode.USAGE)
    if remote_assignor is not None and group_protocol is not GroupProtocol.CONSUMER:
        raise KctlError("--remote-assignor needs -g GROUP --group-protocol consumer", ExitCode.USAGE)
    reset = None if group is None else reset_policy(spec, partitions, exit_at_end)
    conn = connect(options)
    watch = ClusterWatch(conn)
    common = {"isolation.level": isolation.value, "error_cb": watch}
    if group is None:
        consumer = conn.consumer({"enable.partition.eof": exit_at_end or spec.stop is not None, **common})
        reader = Reader(consumer, topic, render, keep=keep)
    else:
        consumer = conn.consumer(
            {
                **group_settings(group, group_protocol or GroupProtocol.CLASSIC, reset, remote_assignor),
                **common,
            }
        )
        reader = Reader(consumer, topic, render, commit or Commit.AFTER, bounded=False, keep=keep)
    started = False
    with Interrupts() as interrupts:
        try:
            _start(reader, conn, topic, partitions, spec, exit_at_end, group, quiet, group_protocol)
            started = True
            reader.run(count, watch)
        except KeyboardInterrupt:
            raise typer.Exit(ExitCode.INTERRUPTED) from None
        except SystemError:
            if interrupts.seen:  # Ctrl-C inside a callback (kctl.consume.interrupts)
                raise typer.Exit(ExitCode.INTERRUPTED) from None
            raise
        finally:
            consumer.close()
            if started and not quiet:
                console.info(f"Processed a total of {reader.count} messages")


def _check_share_options(
    group: str | None, commit: Commit | None, partition: list[str] | None, offset: str, exit_at_end: bool
) -> None:
    """A share group hands out records, not partitions or offsets: the options that choose
    those do not go with it."""
    conflicting = [
        name
        for name, given in (
            ("-g", group is not None),
            ("--commit", commit is not None),
            ("-p", bool(partition)),
            ("-o", offset != "start"),
            ("-e", exit_at_end),
        )
        if given
    ]
    if conflicting:
        raise KctlError(f"--share-group does not go with {', '.join(conflicting)}", ExitCode.USAGE)


def _consume_shared(
    topic: str,
    group: str,
    ack: Ack,
    render: Render,
    keep: Test | None,
    count: int | None,
    quiet: bool,
    options: ConnectionOptions,
) -> None:
    """Print the records the share group hands this member, acknowledging each as asked."""
    conn = connect(options)
    consumer = share_consumer(conn, group, topic)
    reader = ShareReader(consumer, render, ack, keep)
    if not quiet:
        console.info(f"share group {group}: reading {topic}, acknowledging records as {ack.value}")
    try:
        reader.run(count)
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    finally:
        consumer.close()
        if not quiet:
            console.info(f"Processed a total of {reader.count} messages")


def _start(
    reader: Reader,
    conn: Connection,
    topic: str,
    partitions: list[int] | None,
    spec: OffsetRange,
    exit_at_end: bool,
    group: str | None,
    quiet: bool,
    protocol: GroupProtocol | None,
) -> None:
    """Assign the planned partition ranges, or join the group (after checking the topic)."""
    if group is None:
        reader.assign(plan(reader.consumer, conn, topic, partitions, spec, exit_at_end))
        return
    find_topic(fetch_metadata(reader.consumer, conn, topic), topic)
    incremental = protocol is GroupProtocol.CONSUMER
    Membership(group, reader, quiet, incremental).subscribe(reader.consumer, topic)


def _compile(
    offset: str, fmt: str, json_output: bool, filters: list[str], shared: bool
) -> tuple[OffsetRange, Render, Test | None]:
    """Check the offset spec, output format and filters before touching the cluster; records
    of a share group (``shared``) have a delivery count to show."""
    if json_output and fmt != DEFAULT_FORMAT:
        raise KctlError("use either --format or --json, not both", ExitCode.USAGE)
    try:
        spec = parse(offset, now_ms=int(time.time() * 1000))
        render: Render
        if json_output:
            render = shared_record_json if shared else record_json
        else:
            render = compile_format(fmt, shared)
        return spec, render, compile_filters(filters)
    except (OffsetSyntaxError, FormatError, FilterSyntaxError) as exc:
        raise KctlError(str(exc), ExitCode.INVALID_INPUT) from None
