"""`kctl broker list|kill|stop|start|pause|resume|throttle|isolate|heal|netem`: one broker of the
local cluster at a time.

These are real signals to the real daemons, for demos: kill a leader and watch the controller
elect another (`kctl watch` in a second terminal), pause a follower and watch the ISR shrink,
isolate a leader and watch it fenced (the network faults are in netfaultcommands.py).
"""

from __future__ import annotations

from typing import Annotated

import typer

from kctl.cluster import brokerconfig, brokerctl, brokerview, localcluster, netfaultcommands
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import ClusterDir, Json

app = typer.Typer(
    help="List the local cluster's brokers and inject faults: kill, stop, start, pause, resume, "
    "throttle, isolate, heal, netem.",
    no_args_is_help=True,
)

BrokerId = Annotated[
    int, typer.Argument(metavar="ID", help="Broker id, as in `kctl broker list`.", show_default=False)
]


@app.command("list")
def list_brokers(cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """Show each broker's address, pid, state and lease age; the controller is marked '*'.

    States: alive; paused (its process holds its lock but has not renewed its lease within
    broker.session.timeout.ms, so the cluster treats it as dead); isolated (running, but a
    network fault cuts it off from the controller quorum: `kctl broker isolate`);
    shutting-down; dead.
    """
    state = localcluster.existing(cluster_dir)
    views = brokerview.view(state)
    controller = state.controller()
    if json_output:
        console.print_json(
            {"controller": brokerview.controller_json(controller), "brokers": [b.to_json() for b in views]}
        )
    else:
        console.print_section(brokerview.section(views, controller))


@app.command()
def kill(broker_id: BrokerId, cluster_dir: ClusterDir = None) -> None:
    """Kill a broker with SIGKILL: no hand-over; the controller moves its leaderships."""
    broker = brokerctl.kill(localcluster.existing(cluster_dir), broker_id)
    console.info(
        f"Killed broker {broker_id} (SIGKILL to pid {broker.pid}). The partitions it led "
        "move to another in-sync replica, if one is left; "
        f"`kctl broker start {broker_id}` brings it back."
    )


@app.command()
def stop(
    broker_id: BrokerId,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", metavar="SECONDS", min=0.1, help="How long to wait for the broker to exit."
        ),
    ] = localcluster.STOP_TIMEOUT_S,
    cluster_dir: ClusterDir = None,
) -> None:
    """Stop a broker gracefully (SIGTERM) and wait until it has exited.

    A controlled shutdown: the controller first moves the broker's leaderships to other
    in-sync replicas. A paused broker is resumed so that it can stop.
    """
    brokerctl.stop(localcluster.existing(cluster_dir), broker_id, timeout)
    console.info(
        f"Stopped broker {broker_id} (controlled shutdown). `kctl broker start {broker_id}` brings it back."
    )


@app.command()
def start(
    broker_id: BrokerId,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            min=0.1,
            show_default=False,
            help="Stop waiting after this long (exit 3) and leave the broker to finish starting. "
            "Default: wait as long as it takes while the broker runs.",
        ),
    ] = None,
    cluster_dir: ClusterDir = None,
) -> None:
    """Start a stopped or killed broker again, with its data, port and the cluster's settings.

    It catches up from the leaders, rejoins the ISR, and takes back the partitions it is the
    preferred leader of. The command waits until the broker answers: after a crash a broker
    with many partitions recovers its logs first, which can take minutes, and a slow broker
    is never stopped for it (Ctrl-C does stop it). A broker that exits while it starts is
    reported with the end of its log (exit 1).
    """
    broker = brokerctl.start(localcluster.existing(cluster_dir), broker_id, timeout)
    console.info(f"Started broker {broker_id} on {broker.address} (pid {broker.pid}).")


@app.command()
def pause(broker_id: BrokerId, cluster_dir: ClusterDir = None) -> None:
    """Freeze a broker with SIGSTOP: its process stays, but it stops renewing its lease.

    After broker.session.timeout.ms the cluster presumes it dead: it leaves every ISR and its
    leaderships move. When resumed, a paused controller finds its epoch stale and resigns.
    """
    state = localcluster.existing(cluster_dir)
    broker = brokerctl.pause(state, broker_id)
    timeout_ms = int(brokerconfig.session_timeout_s(state.cluster_dir) * 1000)
    console.info(
        f"Paused broker {broker_id} (SIGSTOP to pid {broker.pid}). The cluster presumes "
        f"it dead after broker.session.timeout.ms={timeout_ms}; "
        f"`kctl broker resume {broker_id}` continues it."
    )


@app.command()
def resume(broker_id: BrokerId, cluster_dir: ClusterDir = None) -> None:
    """Continue a paused broker (SIGCONT): it renews its lease, catches up and rejoins the ISR."""
    broker = brokerctl.resume(localcluster.existing(cluster_dir), broker_id)
    console.info(f"Resumed broker {broker_id} (SIGCONT to pid {broker.pid}).")


@app.command()
def throttle(
    broker_id: BrokerId,
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate",
            metavar="BYTES/S",
            show_default=False,
            help="Bytes per second the broker may copy from its leaders: 50000, 64KB/s, 1MiB "
            "(k, M: 1000s; Ki, Mi: 1024s).",
        ),
    ] = None,
    off: Annotated[bool, typer.Option("--off", help="Copy at full speed again.")] = False,
    cluster_dir: ClusterDir = None,
) -> None:
    """Slow one follower: the broker copies from its leaders at most --rate bytes a second.

    It stays alive and keeps its leaderships (unlike pause, nothing moves), but its log ends
    fall behind under load: the high watermark waits for it, and after replica.lag.time.max.ms
    without catching up it leaves the ISR. `--off` lets it catch up and rejoin. Unlike Kafka's
    replication quotas (follower.replication.throttled.rate), it slows in-sync replicas too:
    that is the lesson it is for.
    """
    if (rate is None) != off:
        raise KctlError("give either --rate BYTES/S or --off", ExitCode.USAGE)
    bytes_per_s = None if rate is None else brokerctl.parse_byte_rate(rate)
    brokerctl.throttle(localcluster.existing(cluster_dir), broker_id, bytes_per_s)
    if off:
        console.info(f"Broker {broker_id} copies from its leaders at full speed again.")
    else:
        console.info(
            f"Broker {broker_id} copies from its leaders at most {bytes_per_s} bytes/s; "
            f"`kctl broker throttle {broker_id} --off` lifts it."
        )


app.command()(netfaultcommands.isolate)
app.command()(netfaultcommands.heal)
app.command()(netfaultcommands.netem)
