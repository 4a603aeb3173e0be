"""Network faults on a local cluster: isolate a broker, partition the cluster, lose packets, heal.

What is in force is kept in the state directory (brokerd.state.faults.NetworkFaults), where the
brokers read whether they reach the controller quorum, `kctl cluster status` and the watch
show it; the packets are dropped by the cluster's nftables table (packetfilter). Every change
rewrites both under one lock, so the table always says what the document says. No rule may
outlive what it was made for: a fault keeper (faultkeeper) heals the faults of a broker that
dies and everything when it is stopped; `kctl cluster down` heals first.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from brokerd.state.faults import CLIENTS, InjectedFaults, NetworkFaults, Node
from kctl.cluster import brokerctl, brokerview, packetfilter
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView

DIRECTORY = "netfaults"  # under the cluster directory: the lock, the keeper's lock and log
BOTH, IN, OUT = "both", "in", "out"


@contextmanager
def changing(cluster_dir: Path) -> Iterator[None]:
    """Held while the faults document and the table are changed together."""
    from filelock import FileLock  # asyncio comes with it: only when faults change

    directory = Path(cluster_dir) / DIRECTORY
    directory.mkdir(exist_ok=True)
    with FileLock(str(directory / ".lock")):
        yield


def addresses(state: ClusterView) -> dict[int, tuple[str, int]]:
    """Each planned broker's (address, port)."""
    return {b.id: (b.host, b.port) for b in brokerview.view(state)}


def change(state: ClusterView, edit: Callable[[NetworkFaults], NetworkFaults]) -> NetworkFaults:
    """Apply ``edit`` to the faults in force, in the document and in the packet filter; a
    keeper is started while any fault is left. Returns the faults now in force."""
    packetfilter.require_nft()
    hosts = addresses(state)
    packetfilter.require_addresses({broker_id: host for broker_id, (host, _) in hosts.items()})
    injected = InjectedFaults(state.cluster_dir)
    with changing(state.cluster_dir):
        before = injected.network_faults()
        faults = injected.change_network_faults(edit)
        try:
            packetfilter.apply(state.cluster_dir, faults, hosts)
        except BaseException:  # nothing half-made: the document goes back to what the table holds
            injected.change_network_faults(lambda _: before)
            raise
    if faults:
        from kctl.cluster import faultkeeper

        faultkeeper.ensure_running(state.cluster_dir)
    return faults


def heal_all(state: ClusterView) -> None:
    """Remove every network fault of the cluster (`kctl cluster down`, the keeper's stop).
    With none in force, a table left over is removed where nft can be run, and nothing is
    asked where it cannot."""
    if not state.network_faults():
        packetfilter.remove_if_present(state.cluster_dir)
        return
    with changing(state.cluster_dir):
        InjectedFaults(state.cluster_dir).change_network_faults(lambda _: NetworkFaults())
        packetfilter.remove(state.cluster_dir)


def isolate(
    state: ClusterView,
    broker_id: int,
    peers: Collection[Node],
    from_quorum: bool,
    direction: str = BOTH,
) -> NetworkFaults:
    """Cut ``broker_id`` off from ``peers`` (broker ids, CLIENTS) and, with ``from_quorum``,
    from the controller quorum. ``direction``: what is lost, OUT what the broker sends, IN
    what it receives, BOTH."""
    brokerctl.running(state, broker_id)
    cuts: set[tuple[Node, Node]] = set()
    for peer in peers:
        if direction in (BOTH, OUT):
            cuts.add((broker_id, peer))
        if direction in (BOTH, IN):
            cuts.add((peer, broker_id))
    quorum = {broker_id} if from_quorum else set()
    return change(
        state,
        lambda f: NetworkFaults(f.cuts | cuts, f.cut_from_quorum | quorum, f.loss),
    )


def partition(state: ClusterView, sides: list[set[int]], quorum_side: int) -> NetworkFaults:
    """Cut every side off from every other, both ways; brokers on no side reach all of them
    (a bridge). The controller quorum stays reachable from ``sides[quorum_side]`` and brokers
    on no side; the brokers of the other sides are cut off from it."""
    for side in sides:
        for broker_id in side:
            brokerctl.running(state, broker_id)
    cuts = {
        (a, b)
        for i, side in enumerate(sides)
        for j, other in enumerate(sides)
        if i != j
        for a in side
        for b in other
    }
    cut_off = set().union(*(side for i, side in enumerate(sides) if i != quorum_side))
    return change(
        state,
        lambda f: NetworkFaults(f.cuts | cuts, f.cut_from_quorum | cut_off, f.loss),
    )


def quorum_side(state: ClusterView, sides: list[set[int]]) -> int:
    """The side that keeps the quorum: the one with most brokers; on a tie, the controller's,
    else the first."""
    largest = max(len(side) for side in sides)
    tied = [i for i, side in enumerate(sides) if len(side) == largest]
    controller = state.controller()
    return next((i for i in tied if controller is not None and controller[0] in sides[i]), tied[0])


def lose(state: ClusterView, broker_id: int, percent: int | None) -> NetworkFaults:
    """Drop ``percent`` of the packets a broker sends and receives (None: none again)."""
    brokerctl.running(state, broker_id)

    def edit(f: NetworkFaults) -> NetworkFaults:
        loss = {b: p for b, p in f.loss.items() if b != broker_id}
        if percent:
            loss[broker_id] = percent
        return NetworkFaults(f.cuts, f.cut_from_quorum, loss)

    return change(state, edit)


def heal(state: ClusterView, broker_ids: Collection[int] | None) -> NetworkFaults:
    """Remove the faults on these brokers (cuts, quorum, loss), or all of them."""
    if broker_ids is None:
        heal_all(state)
        return NetworkFaults()
    for broker_id in broker_ids:
        brokerctl.lookup(state, broker_id)
    return change(state, lambda f: f.without(set(broker_ids)))


def parse_peers(text: str, broker_ids: Collection[int]) -> tuple[set[Node], bool]:
    """`--from`: comma-separated broker ids, `clients`, `controller` (the quorum); the
    peers named and whether the quorum is among them."""
    peers: set[Node] = set()
    quorum = False
    for word in (w.strip().lower() for w in text.split(",") if w.strip()):
        if word == "controller":
            quorum = True
        elif word == CLIENTS:
            peers.add(CLIENTS)
        elif word.isdigit() and int(word) in broker_ids:
            peers.add(int(word))
        else:
            raise KctlError(
                f"--from {text!r}: {word!r} is not a broker id of this cluster, 'clients' or 'controller'",
                ExitCode.USAGE,
            )
    return peers, quorum


def parse_sides(words: list[str], broker_ids: Collection[int]) -> list[set[int]]:
    """`kctl cluster partition 1 / 2,3`: sides of broker ids with `/` between them."""
    sides: list[set[int]] = []
    for text in " ".join(words).split("/"):
        ids = [w for w in text.replace(",", " ").split()]
        if not ids or not all(w.isdigit() and int(w) in broker_ids for w in ids):
            raise KctlError(
                f"cannot read {' '.join(words)!r} as sides of broker ids: give them as 1 / 2,3",
                ExitCode.USAGE,
            )
        sides.append({int(w) for w in ids})
    named = [b for side in sides for b in side]
    if len(sides) < 2 or len(named) != len(set(named)):
        raise KctlError(
            "a partition needs two sides or more, each broker on one side at most: 1 / 2,3", ExitCode.USAGE
        )
    return sides


def describe(faults: NetworkFaults) -> list[str]:
    """One line per fault in force, for `kctl cluster status` and the commands' answers."""
    lines = []
    pairs = set(faults.cuts)
    for sender, receiver in sorted(faults.cuts, key=lambda cut: tuple(map(_order, cut))):
        if (sender, receiver) not in pairs:
            continue
        if (receiver, sender) in pairs:
            pairs -= {(receiver, sender), (sender, receiver)}
            lines.append(f"{_name(sender)} and {_name(receiver)} cannot reach each other")
        else:
            pairs.discard((sender, receiver))
            lines.append(f"what {_name(sender)} sends {_name(receiver)} is lost")
    lines += [f"broker {b} is cut off from the controller quorum" for b in sorted(faults.cut_from_quorum)]
    lines += [f"broker {b} loses {p}% of its packets" for b, p in sorted(faults.loss.items())]
    return lines


def _order(node: Node) -> tuple[int, int]:
    """Brokers by id, then clients."""
    return (1, 0) if node == CLIENTS else (0, int(node))


def _name(node: Node) -> str:
    return "clients" if node == CLIENTS else f"broker {node}"
