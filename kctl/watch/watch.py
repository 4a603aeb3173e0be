"""`kctl watch [TOPIC]`: a live dashboard of the local cluster, for demos and classes."""

from __future__ import annotations

import time
from collections import deque
from typing import Annotated

import typer
from rich.live import Live

from brokerd.state import ClusterState
from kctl.cluster import localcluster, snapshot
from kctl.kafka.client import connect
from kctl.shell import console
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import DEFAULT_TIMEOUT, Bootstrap, ClusterDir, CommandConfig, Json, Settings, Timeout
from kctl.watch import dashboard, events
from kctl.watch.groupwatch import GroupPoller, GroupSource, poll_once

MAX_EVENTS = 10


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
            "--once", help="Print one snapshot and exit (also what happens when stdout is not a terminal)."
        ),
    ] = False,
    bootstrap: Bootstrap = None,
    cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    settings: Settings = None,
    command_config: CommandConfig = None,
    json_output: Json = False,
) -> None:
    """Watch brokers, partitions and consumer groups change while you break things.

    Brokers (alive, paused, dead; the controller and its epoch), then per partition the
    leader, leader epoch, replicas (out-of-sync ones in red), ISR, log start, last stable
    offset (yellow while an open transaction holds it below the high watermark), high
    watermark, each replica's log end (yellow below the high watermark) and the open
    transactions (producer id:epoch@first offset), then each group's state, members,
    committed offsets and lag, the brokers' latest security events on a secured cluster
    (authentication failures, and requests an ACL denied with the rule that decided), and a
    log of recent changes: leaders moving, epochs rising,
    the ISR shrinking and growing, the ISR below min.insync.replicas (acks=all refused), the
    high watermark stalled on an in-sync replica, a replica truncating a divergent tail,
    retention or DeleteRecords moving the log start, a paused controller waking up fenced,
    a broker throttled, transactions opening and ending. Each partition is one moment its
    leader published (every 0.5 s), so its numbers never contradict each other. Brokers and
    partitions come from the local cluster's state directory, so they stay visible while
    brokers are dead or paused; groups are asked of the cluster. Kill, pause and throttle
    brokers with `kctl broker` in another terminal.
    """
    state = localcluster.existing(cluster_dir)
    snapshot.take(state, topic)  # an unknown topic is exit 4 before anything is shown
    source = GroupSource(
        lambda: connect(bootstrap, cluster_dir, timeout, settings, command_config), group or [], topic
    )
    if once or json_output or not console.stdout().is_terminal:
        snap = _snapshot(state, topic, poll_once(source))
        if json_output:
            console.print_json(snap)
        else:
            for section in dashboard.build(snap, []):
                console.print_section(section)
        return
    try:
        _live(state, topic, GroupPoller(source, interval), interval)
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None


def _snapshot(state: ClusterState, topic: str | None, groups: tuple[list[dict], str | None]) -> dict:
    return {**snapshot.take(state, topic), "groups": groups[0], "groups_error": groups[1]}


def _live(state: ClusterState, topic: str | None, poller: GroupPoller, interval: float) -> None:
    """Redraw every `interval` until Ctrl-C; the last frame stays on the terminal."""
    recent: deque[dashboard.Event] = deque(maxlen=MAX_EVENTS)
    before = None
    poller.start()
    try:
        with Live(console=console.stdout(), auto_refresh=False) as live:
            while True:
                snap = _snapshot(state, topic, poller.latest)
                if before is not None:
                    recent.extend((snap["time"], line) for line in events.changes(before, snap))
                live.update(dashboard.screen(snap, list(recent), interval), refresh=True)
                before = snap
                time.sleep(interval)
    finally:
        poller.stop()
