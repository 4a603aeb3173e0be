"""`kctl broker isolate|heal|netem` and `kctl cluster partition`: network faults, for real.

Kill and pause are process faults: every broker left alive still reaches every other. These
cut brokers apart while they run, as a network partition does (Jepsen's main fault): a leader
that is alive but unreachable, a follower whose fetches go out but whose answers never come
back. The commands are registered on the `broker` and `cluster` groups (broker.py, cluster.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from kctl.cluster import brokerconfig, localcluster, netfaults
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import ClusterDir

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView
    from brokerd.state.faults import NetworkFaults, Node

BrokerId = Annotated[
    int, typer.Argument(metavar="ID", help="Broker id, as in `kctl broker list`.", show_default=False)
]
HoldFor = Annotated[
    float | None,
    typer.Option(
        "--for",
        metavar="SECONDS",
        min=0.1,
        show_default=False,
        help="Heal it after this long (Ctrl-C heals it at once); without it, it stays until "
        "`kctl broker heal`.",
    ),
]


def isolate(
    broker_id: BrokerId,
    peers: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="IDS|clients|controller",
            show_default=False,
            help="Cut it off from these only, comma-separated: broker ids, `clients` (every process "
            "that is not a broker), `controller` (the controller quorum). Default: all of them.",
        ),
    ] = None,
    direction: Annotated[
        str,
        typer.Option(
            "--direction",
            metavar="both|in|out",
            help="What is lost: `out` what the broker sends (its answers too), `in` what it "
            "receives, `both`. A one-way cut of a leader from a follower (`--from 2 --direction "
            "out`) lets the fetches arrive but loses the answers.",
        ),
    ] = netfaults.BOTH,
    hold_for: HoldFor = None,
    cluster_dir: ClusterDir = None,
) -> None:
    """Cut a broker off the network: from the other brokers, the clients and the controller quorum.

    Its packets are dropped by the kernel's packet filter (nftables; needs CAP_NET_ADMIN,
    else exit 6). It stays alive and goes on answering the clients it can reach as the leader
    it was, but it cannot reach the quorum: after broker.session.timeout.ms the controller
    fences it and moves its leaderships. Writes with acks=all wait for followers it cannot
    reach and fail; writes with acks=1 it still acknowledges, and they are lost when the cut
    heals and it truncates to the new leader's log.
    """
    if direction not in (netfaults.BOTH, netfaults.IN, netfaults.OUT):
        raise KctlError(f"--direction {direction!r}: expected both, in or out", ExitCode.USAGE)
    state = localcluster.existing(cluster_dir)
    others = [b for b in state.planned_brokers() if b != broker_id]
    chosen: set[Node]
    if peers is None:
        chosen, quorum = {*others, netfaults.CLIENTS}, True
    else:
        chosen, quorum = netfaults.parse_peers(peers, others)
    timeout_ms = int(brokerconfig.session_timeout_s(state.cluster_dir) * 1000)
    fenced = f" The controller fences broker {broker_id} after broker.session.timeout.ms={timeout_ms}."
    _make(
        state,
        lambda: netfaults.isolate(state, broker_id, chosen, quorum, direction),
        hold_for,
        [broker_id],
        fenced if quorum else "",
    )


def heal(
    broker_id: Annotated[
        int | None,
        typer.Argument(
            metavar="[ID]", help="The broker to reconnect. Default: every broker.", show_default=False
        ),
    ] = None,
    cluster_dir: ClusterDir = None,
) -> None:
    """Remove the network faults on a broker (cuts, quorum, packet loss), or on every broker.

    A broker that was cut off from the quorum renews its lease, learns the leaders elected
    without it, and truncates what it wrote alone as a leader since it was cut off.
    """
    state = localcluster.existing(cluster_dir)
    left = netfaults.heal(state, None if broker_id is None else [broker_id])
    healed = "every broker" if broker_id is None else f"broker {broker_id}"
    still = " Still in force: " + "; ".join(netfaults.describe(left)) + "." if left else ""
    console.info(f"Healed {healed}.{still}")


def netem(
    broker_id: BrokerId,
    loss: Annotated[
        str | None,
        typer.Option(
            "--loss",
            metavar="PERCENT",
            show_default=False,
            help="Share of the broker's packets lost, in and out: 5%.",
        ),
    ] = None,
    delay: Annotated[
        str | None,
        typer.Option(
            "--delay",
            metavar="MS",
            show_default=False,
            help="Delay of each packet (tc netem, where the kernel has it).",
        ),
    ] = None,
    jitter: Annotated[
        str | None,
        typer.Option("--jitter", metavar="MS", show_default=False, help="Random variation of --delay."),
    ] = None,
    off: Annotated[bool, typer.Option("--off", help="Stop losing its packets.")] = False,
    hold_for: HoldFor = None,
    cluster_dir: ClusterDir = None,
) -> None:
    """Make a broker's network bad without cutting it: lose a share of its packets at random.

    TCP resends what is lost, so nothing acknowledged is lost either, but requests slow down,
    the ISR may shrink and grow again, and clients retry. Packets are dropped by nftables
    (`numgen random`; needs CAP_NET_ADMIN, else exit 6).
    """
    if off == (loss is not None or delay is not None):
        raise KctlError("give --loss PERCENT (and --delay MS) or --off", ExitCode.USAGE)
    if delay is not None or jitter is not None:
        raise KctlError(
            "--delay and --jitter need tc netem, which this kernel does not have (no sch_netem): use --loss",
            ExitCode.CONFLICT,
        )
    state = localcluster.existing(cluster_dir)
    percent = None if off else _percent(loss or "0")
    _make(state, lambda: netfaults.lose(state, broker_id, percent), None if off else hold_for, [broker_id])


def partition(
    sides: Annotated[
        list[str],
        typer.Argument(
            metavar="SIDE / SIDE ...",
            help="Broker ids of each side, comma-separated, `/` between sides: 1 / 2,3.",
            show_default=False,
        ),
    ],
    quorum_with: Annotated[
        int | None,
        typer.Option(
            "--quorum-with",
            metavar="ID",
            show_default=False,
            help="The side of this broker keeps the controller quorum. Default: the larger side "
            "(on a tie, the controller's).",
        ),
    ] = None,
    hold_for: HoldFor = None,
    cluster_dir: ClusterDir = None,
) -> None:
    """Split the cluster: brokers on different sides cannot reach each other.

    Clients still reach every broker, and brokers on no side reach every side (a bridge).
    The side with the controller quorum goes on: the controller fences the brokers of the
    other sides after broker.session.timeout.ms and elects leaders among its own; brokers
    cut off from the quorum keep serving what they led until the partition heals.
    """
    state = localcluster.existing(cluster_dir)
    split = netfaults.parse_sides(sides, state.planned_brokers())
    if quorum_with is None:
        keeper = netfaults.quorum_side(state, split)
    else:
        keeper = next((i for i, side in enumerate(split) if quorum_with in side), -1)
        if keeper < 0:
            raise KctlError(f"--quorum-with {quorum_with}: that broker is on no side", ExitCode.USAGE)
    _make(state, lambda: netfaults.partition(state, split, keeper), hold_for, sorted(set().union(*split)))


def _percent(text: str) -> int:
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = -1
    if not 0 <= value <= 100:
        raise KctlError(f"--loss {text!r}: expected a percentage from 0 to 100, e.g. 5%", ExitCode.USAGE)
    return round(value)


def _make(
    state: ClusterView,
    make: Callable[[], NetworkFaults],
    seconds: float | None,
    broker_ids: list[int],
    consequence: str = "",
) -> None:
    """Make a fault and say what is in force; with --for, wait, then heal the brokers it is
    on. Ctrl-C while it is held (or being made) heals them at once (exit 130)."""
    try:
        faults = make()
        told = "; ".join(netfaults.describe(faults)) or "none"
        console.info(f"Network faults now: {told}.{consequence}")
        if seconds is None:
            return
        time.sleep(seconds)
    except KeyboardInterrupt:
        if seconds is not None:
            netfaults.heal(state, broker_ids)
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    netfaults.heal(state, broker_ids)
    console.info(f"Healed after {seconds:g}s.")
