"""`kctl watch [TOPIC]`: a live dashboard of the local cluster, for demos and classes."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.live import Live

from kctl.cluster import localcluster, snapshot
from kctl.kafka.client import Connection, connect
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import (
    Json,
    SchemaRegistryUrl,
)
from kctl.watch import connectwatch, dashboard, events, record
from kctl.watch.groupwatch import GroupPoller, GroupSource, poll_once
from kctl.watch.sample import MAX_PARTITIONS, SamplePoller, SampleSource
from kctl.watch.sample import decoder as sample_decoder

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView

MAX_EVENTS = 10


@connection_options()
def watch(
    topic: Annotated[
        str | None,
        typer.Argument(
            metavar="[TOPIC]",
            show_default=False,
            help="Only this topic. Default: every topic except internal ones (__consumer_offsets).",
        ),
    ] = None,
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            show_default=False,
            help="Show these consumer groups (repeatable). Default: every group (reading TOPIC, if given).",
        ),
    ] = None,
    interval: Annotated[
        float, typer.Option("--interval", "-i", metavar="SECONDS", min=0.1, help="Refresh period.")
    ] = 0.5,
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            help="Print one snapshot and exit (also what happens when stdout is not a terminal, "
            "unless --record or --duration is given).",
        ),
    ] = False,
    record_to: Annotated[
        Path | None,
        typer.Option(
            "--record",
            metavar="FILE",
            show_default=False,
            dir_okay=False,
            help="Append every moment shown to FILE, one JSON object a line: the snapshot "
            "(as --json prints it), the faults in force and the changes narrated; "
            "`kctl report FILE` draws it. Watches until Ctrl-C or --duration, terminal or not.",
        ),
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option(
            "--duration",
            metavar="DURATION",
            show_default=False,
            help="Stop after this long (20s, 5m, 1h30m; a bare number is seconds). When stdout "
            "is not a terminal, each change is printed as it is seen and the last moment's "
            "tables at the end; with --json, every moment as --record writes it.",
        ),
    ] = None,
    sample: Annotated[
        bool,
        typer.Option(
            "--sample",
            help="Also show the latest record of each partition of TOPIC (the first "
            f"{MAX_PARTITIONS}): keys and values written with a schema registry's schema as JSON "
            "with their schema id, others as text. One consumer reads them, a partition again "
            "only when its end moved, at most once per --interval.",
        ),
    ] = False,
    registry: SchemaRegistryUrl = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Watch brokers, partitions and consumer groups change while you break things.

    Brokers (alive, paused, dead; the controller and its epoch), then per partition the
    leader, leader epoch, replicas (out-of-sync ones in red), ISR, log start, last stable
    offset (yellow while an open transaction holds it below the high watermark), high
    watermark, each replica's log end (yellow below the high watermark) and the open
    transactions (producer id:epoch@first offset), then each group's state, members,
    committed offsets and lag, the connectors of a connect worker running beside the cluster
    (state, tasks, records in and out, errors, dead letters, lag, last error), the brokers'
    latest security events on a secured cluster
    (authentication failures, and requests an ACL denied with the rule that decided), and a
    log of recent changes: leaders moving, epochs rising,
    the ISR shrinking and growing, the ISR below min.insync.replicas (acks=all refused), the
    high watermark stalled on an in-sync replica, a replica truncating a divergent tail,
    retention or DeleteRecords moving the log start, a paused controller waking up fenced,
    a broker throttled, transactions opening and ending; in a share group, records acquired,
    acquired again (with their delivery count), released, rejected, accepted, archived at
    the delivery count limit and back after an acquisition lock expired, as each share
    partition's leader counts them, and how many are in flight. Each partition is one moment its
    leader published (every 0.5 s), so its numbers never contradict each other. Brokers and
    partitions come from the local cluster's state directory, so they stay visible while
    brokers are dead or paused; groups are asked of the cluster. Kill, pause and throttle
    brokers with `kctl broker` in another terminal.
    """
    seconds = None if duration is None else record.seconds(duration)
    state = localcluster.existing(options.cluster_dir)
    snapshot.take(state, topic)  # an unknown topic is exit 4 before anything is shown
    connection = partial(connect, options)
    source = GroupSource(connection, group or [], topic)
    sampler = _sample_source(topic, connection, registry, options) if sample else None
    recorder = None if record_to is None else record.Recorder(record_to)
    try:
        over_time = not once and (seconds is not None or recorder is not None)
        if not over_time and (once or json_output or not console.stdout().is_terminal):
            _print_once(_first_snapshot(state, topic, source, sampler), json_output, recorder)
            return
        deadline = None if seconds is None else time.monotonic() + seconds
        samples = None if sampler is None else SamplePoller(sampler, interval)
        moments = _moments(
            state, topic, (GroupPoller(source, interval), samples), interval, deadline, recorder
        )
        with closing(moments):
            if json_output or not console.stdout().is_terminal:
                _plain(moments, json_output)
            else:
                _live(moments, interval)
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    finally:
        if recorder is not None:
            recorder.close()
            console.info(f"recorded {recorder.moments} moment(s) to {recorder.path}")


def _snapshot(
    state: ClusterView, topic: str | None, groups: tuple[list[dict], str | None], connect: dict | None
) -> dict:
    """The cluster's moment, its groups and, when a connect worker runs beside it, its connectors."""
    snap = {**snapshot.take(state, topic), "groups": groups[0], "groups_error": groups[1]}
    if connect is not None:
        snap["connect"] = connect
    return snap


def _sample_source(
    topic: str | None,
    connection: Callable[[], Connection],
    registry: str | None,
    options: ConnectionOptions,
) -> SampleSource:
    """--sample's reader, decoding with the registry `kctl consume` would use."""
    if topic is None:
        raise KctlError(
            "--sample needs a TOPIC: it shows the latest record of each of its partitions", ExitCode.USAGE
        )
    return SampleSource(connection, topic, sample_decoder(registry, options))


def _first_snapshot(
    state: ClusterView, topic: str | None, source: GroupSource, sampler: SampleSource | None
) -> dict:
    """The one snapshot of --once, with its sample read there and then (the consumer closed)."""
    snap = _snapshot(state, topic, poll_once(source), connectwatch.poll_once(state.cluster_dir))
    if sampler is not None:
        try:
            snap["sample"] = sampler.fetch(snap)
        finally:
            sampler.close()
    return snap


def _print_once(snap: dict, json_output: bool, recorder: record.Recorder | None) -> None:
    if recorder is not None:
        recorder.write(snap, [])
    if json_output:
        console.print_json(snap)
    else:
        for section in dashboard.build(snap, []):
            console.print_section(section)


def _moments(
    state: ClusterView,
    topic: str | None,
    pollers: tuple[GroupPoller, SamplePoller | None],
    interval: float,
    deadline: float | None,
    recorder: record.Recorder | None,
) -> Generator[tuple[dict, list[str]], None, None]:
    """Every moment and the changes since the one before, every `interval` until `deadline`
    (monotonic; None: until the caller stops), each recorded first if recording. With a
    sample poller, each moment carries the latest sample read, and hands it the moment's
    partition ends to read the next one by."""
    before = None
    poller, samples = pollers
    connectors = connectwatch.ConnectPoller(state.cluster_dir, interval)
    poller.start()
    connectors.start()
    try:
        while True:
            snap = _snapshot(state, topic, poller.latest, connectors.latest)
            if samples is not None:
                samples.offer(snap)
                snap["sample"] = samples.latest
            changed: list[str] = [] if before is None else events.changes(before, snap)
            if recorder is not None:
                recorder.write(snap, changed)
            yield snap, changed
            before = snap
            pause = interval if deadline is None else min(interval, deadline - time.monotonic())
            if pause <= 0:
                return
            time.sleep(pause)
    finally:
        poller.stop()
        connectors.stop()
        if samples is not None:
            samples.stop()


def _plain(moments: Iterator[tuple[dict, list[str]]], json_output: bool) -> None:
    """For scripts: every moment as a JSON line (as --record writes it), or each change as a
    line as it is seen and the last moment's tables at the end."""
    last = None
    for snap, changed in moments:
        if json_output:
            console.print_json(record.moment(snap, changed))
            continue
        for line in changed:
            print(f"{dashboard.clock(snap['time'])}  {line}", flush=True)
        last = snap
    if last is not None:
        for section in dashboard.build(last, []):
            console.print_section(section)


def _live(moments: Iterator[tuple[dict, list[str]]], interval: float) -> None:
    """Redraw at every moment until Ctrl-C or the deadline; the last frame stays on the terminal."""
    recent: deque[dashboard.Event] = deque(maxlen=MAX_EVENTS)
    with Live(console=console.stdout(), auto_refresh=False) as live:
        for snap, changed in moments:
            recent.extend((snap["time"], line) for line in changed)
            live.update(dashboard.screen(snap, list(recent), interval), refresh=True)
