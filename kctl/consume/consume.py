"""`kctl consume TOPIC`: records to stdout, formatted like kcat/rpk or as JSON lines. The command
declares the options; kctl.consume.consuming does the work."""

from __future__ import annotations

from typing import Annotated

import typer

from kctl.consume import consuming, schemadecoding
from kctl.consume.consuming import ConsumeRequest
from kctl.consume.formatting import DEFAULT_FORMAT
from kctl.consume.membership import GroupProtocol, RemoteAssignor
from kctl.consume.reader import Commit
from kctl.kafka.share import Ack
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.options import Isolation, SchemaRegistryUrl


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
    consuming.consume(
        ConsumeRequest(
            topic=topic,
            offset=offset,
            count=count,
            partitions=tuple(partition or ()),
            fmt=fmt,
            json_output=json_output,
            filters=tuple(filters or ()),
            exit_at_end=exit_at_end,
            quiet=quiet,
            group=group,
            group_protocol=group_protocol,
            remote_assignor=remote_assignor,
            commit=commit,
            share_group=share_group,
            ack=ack,
            isolation=isolation,
            decode=decode,
            registry=registry,
            options=options,
        )
    )
