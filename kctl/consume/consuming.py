"""What `kctl consume` does with its options: check them together, then read the topic (its
partitions, as a member of a consumer group or of a share group) and print its records."""

from __future__ import annotations

import time
from dataclasses import dataclass

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
from kctl.shell.connectionoptions import ConnectionOptions
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import OffsetRange, OffsetSyntaxError, parse
from kctl.shell.options import Isolation, parse_partitions


@dataclass(frozen=True)
class ConsumeRequest:
    """`kctl consume`'s options as given (see its --help); consume() checks them together."""

    topic: str
    offset: str  # -o
    count: int | None  # -n
    partitions: tuple[str, ...]  # -p, as given: "0,2", "3"
    fmt: str  # -f
    json_output: bool
    filters: tuple[str, ...]  # --filter
    exit_at_end: bool  # -e
    quiet: bool
    group: str | None  # -g
    group_protocol: GroupProtocol | None
    remote_assignor: RemoteAssignor | None
    commit: Commit | None
    share_group: str | None  # -G
    ack: Ack
    isolation: Isolation
    decode: schemadecoding.Decode
    registry: str | None
    options: ConnectionOptions


def consume(request: ConsumeRequest) -> None:
    """Print the records asked for; options that do not go together are refused first, before
    the cluster is contacted."""
    shared = request.share_group is not None
    spec, render, keep = _compile(request.offset, request.fmt, request.json_output, request.filters, shared)
    if request.decode is schemadecoding.Decode.AUTO:
        decoder = schemadecoding.schema_decoder(request.registry, request.options)
        render = schemadecoding.decoding(render, decoder, request.json_output, shared)
    if request.share_group is not None:
        _check_share_options(request)
        _consume_shared(request, request.share_group, render, keep)
        return
    partitions = parse_partitions(list(request.partitions))
    _check_group_options(request)
    reset = None if request.group is None else reset_policy(spec, partitions, request.exit_at_end)
    conn = connect(request.options)
    watch = ClusterWatch(conn)
    reader = _reader(request, conn, watch, spec, reset, render, keep)
    started = False
    with Interrupts() as interrupts:
        try:
            _start(reader, conn, request, partitions, spec)
            started = True
            reader.run(request.count, watch)
        except KeyboardInterrupt:
            raise typer.Exit(ExitCode.INTERRUPTED) from None
        except SystemError:
            if interrupts.seen:  # Ctrl-C inside a callback (kctl.consume.interrupts)
                raise typer.Exit(ExitCode.INTERRUPTED) from None
            raise
        finally:
            reader.consumer.close()
            if started and not request.quiet:
                console.info(f"Processed a total of {reader.count} messages")


def _check_group_options(request: ConsumeRequest) -> None:
    if request.group is None and request.commit is not None:
        raise KctlError("--commit needs -g GROUP: only a group has offsets to commit", ExitCode.USAGE)
    if request.group is None and request.group_protocol is not None:
        raise KctlError("--group-protocol needs -g GROUP", ExitCode.USAGE)
    if request.remote_assignor is not None and request.group_protocol is not GroupProtocol.CONSUMER:
        raise KctlError("--remote-assignor needs -g GROUP --group-protocol consumer", ExitCode.USAGE)


def _reader(
    request: ConsumeRequest,
    conn: Connection,
    watch: ClusterWatch,
    spec: OffsetRange,
    reset: str | None,
    render: Render,
    keep: Test | None,
) -> Reader:
    """A reader of assigned partitions, or of a group member's (committing as --commit says)."""
    common = {"isolation.level": request.isolation.value, "error_cb": watch}
    if request.group is None:
        bounded = request.exit_at_end or spec.stop is not None
        consumer = conn.consumer({"enable.partition.eof": bounded, **common})
        return Reader(consumer, request.topic, render, keep=keep)
    protocol = request.group_protocol or GroupProtocol.CLASSIC
    consumer = conn.consumer(
        {**group_settings(request.group, protocol, reset, request.remote_assignor), **common}
    )
    return Reader(consumer, request.topic, render, request.commit or Commit.AFTER, bounded=False, keep=keep)


def _check_share_options(request: ConsumeRequest) -> None:
    """A share group hands out records, not partitions or offsets: the options that choose
    those do not go with it, nor those of a consumer group's protocol."""
    conflicting = [
        name
        for name, given in (
            ("-g", request.group is not None),
            ("--commit", request.commit is not None),
            ("-p", bool(request.partitions)),
            ("-o", request.offset != "start"),
            ("-e", request.exit_at_end),
        )
        if given
    ]
    if conflicting:
        raise KctlError(f"--share-group does not go with {', '.join(conflicting)}", ExitCode.USAGE)
    if request.group_protocol is not None or request.remote_assignor is not None:
        raise KctlError(
            "--share-group does not go with --group-protocol or --remote-assignor: a share "
            "group has its own protocol",
            ExitCode.USAGE,
        )


def _consume_shared(request: ConsumeRequest, group: str, render: Render, keep: Test | None) -> None:
    """Print the records the share group hands this member, acknowledging each as asked."""
    conn = connect(request.options)
    consumer = share_consumer(conn, group, request.topic)
    reader = ShareReader(consumer, render, request.ack, keep)
    if not request.quiet:
        console.info(
            f"share group {group}: reading {request.topic}, acknowledging records as {request.ack.value}"
        )
    try:
        reader.run(request.count)
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    finally:
        consumer.close()
        if not request.quiet:
            console.info(f"Processed a total of {reader.count} messages")


def _start(
    reader: Reader, conn: Connection, request: ConsumeRequest, partitions: list[int] | None, spec: OffsetRange
) -> None:
    """Assign the planned partition ranges, or join the group (after checking the topic)."""
    topic = request.topic
    if request.group is None:
        reader.assign(plan(reader.consumer, conn, topic, partitions, spec, request.exit_at_end))
        return
    find_topic(fetch_metadata(reader.consumer, conn, topic), topic)
    incremental = request.group_protocol is GroupProtocol.CONSUMER
    Membership(request.group, reader, request.quiet, incremental).subscribe(reader.consumer, topic)


def _compile(
    offset: str, fmt: str, json_output: bool, filters: tuple[str, ...], shared: bool
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
        return spec, render, compile_filters(list(filters))
    except (OffsetSyntaxError, FormatError, FilterSyntaxError) as exc:
        raise KctlError(str(exc), ExitCode.INVALID_INPUT) from None
