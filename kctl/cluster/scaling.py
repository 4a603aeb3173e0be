"""Growing and shrinking the local cluster: plan a broker and start it, or drain it and stop it.

Replicas move with partition reassignment (kctl.kafka.reassignments), the way Kafka's operators
do it with kafka-reassign-partitions.sh: new replicas catch up before old ones are dropped, so
producers with acks=all keep writing and no acknowledged record is lost. The plans spreading
them over the brokers are made here.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from brokerd.state.cluster_plan import ClusterPlan
from kctl.cluster import brokerconfig, brokerctl, brokerview, localcluster, ports
from kctl.kafka import client, reassignments
from kctl.kafka.client import Connection, fetch_metadata
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView
    from kctl.kafka.reassignments import Plan

ADMIN_TIMEOUT_S = 10.0


def add_broker(state: ClusterView) -> int:
    """Plan the next broker id on a free port and start it; unplanned again if it fails to start."""
    port = ports.free_ports(1)[0]
    broker_plan = ClusterPlan(state.cluster_dir)
    broker_id = broker_plan.plan_broker(port)
    try:
        planned = state.planned_brokers()
        settings = brokerconfig.effective(brokerconfig.remembered(state.cluster_dir), len(planned))
        localcluster.start_missing(state, {broker_id: port}, settings)
    except BaseException:
        broker_plan.unplan_broker(broker_id)
        raise
    return broker_id


def local_connection(state: ClusterView) -> Connection:
    """The local cluster's live brokers, whatever $KCTL_BOOTSTRAP says: these commands act on it."""
    return client.local_connection(state.cluster_dir, ADMIN_TIMEOUT_S)


def assignment(conn: Connection, internal: bool) -> dict[tuple[str, int], list[int]]:
    """Replicas of every partition; internal `__` topics only when asked (a drain must move them)."""
    metadata = fetch_metadata(conn.admin(), conn)
    return {
        (name, p): list(meta.partitions[p].replicas)
        for name, meta in metadata.topics.items()
        if internal or not name.startswith("__")
        for p in meta.partitions
    }


def move(conn: Connection, brokers: list[int], wait_timeout: float, drain: bool = False) -> int:
    """Reassign replicas onto `brokers` and wait until done; returns the partitions moved.

    A rebalance evens out the user's topics; a drain moves only what sits elsewhere,
    internal topics included, so the fewest records travel.
    """
    plan = balanced(assignment(conn, internal=drain), brokers, even=not drain)
    if plan:
        reassignments.alter(conn, plan)
        console.info(f"Moving {len(plan)} partition(s) over brokers {', '.join(map(str, brokers))}...")
        reassignments.wait(conn, set(plan), wait_timeout, _progress)
    return len(plan)


def balanced(placement: dict[tuple[str, int], list[int]], brokers: list[int], even: bool = True) -> Plan:
    """Spread replicas evenly over `brokers`, keeping each partition's replication factor.

    Replicas on brokers outside `brokers` must move (a drain); then, while some broker holds
    two replicas more than another (unless `even` is off), one moves from the fullest to the
    emptiest broker that lacks it. Only partitions whose replica set changes are in the plan,
    so the fewest records travel.
    """
    current = {k: list(v) for k, v in placement.items()}
    for key, replicas in current.items():
        if len(replicas) > len(brokers):
            raise KctlError(
                f"topic {key[0]} has replication factor {len(replicas)} but only "
                f"{len(brokers)} broker(s) would remain",
                ExitCode.CONFLICT,
            )
    load = Counter({b: 0 for b in brokers})
    load.update(r for replicas in current.values() for r in replicas if r in load)
    for _, replicas in sorted(current.items()):
        for i, r in enumerate(replicas):
            if r not in load:
                target = min((b for b in brokers if b not in replicas), key=lambda b: (load[b], b))
                replicas[i] = target
                load[target] += 1
    while even:
        move = _one_move(current, load)
        if move is None:
            break
        key, i, target = move
        load[current[key][i]] -= 1
        load[target] += 1
        current[key][i] = target
    return {k: v for k, v in current.items() if v != placement[k]}


def _one_move(current: dict[tuple[str, int], list[int]], load: Counter) -> tuple | None:
    """A replica move from the fullest broker to the emptiest, if that evens things out."""
    fullest = max(load, key=lambda b: (load[b], -b))
    for target in sorted(load, key=lambda b: (load[b], b)):
        if load[fullest] - load[target] < 2:
            return None
        for key, replicas in sorted(current.items()):
            if fullest in replicas and target not in replicas:
                return key, replicas.index(fullest), target
    return None


def _progress(pending: dict) -> None:
    """Progress for a long move: how many partitions are still adding or removing replicas."""
    if pending:
        adding = sum(len(d["adding_replicas"]) for d in pending.values())
        removing = sum(len(d["removing_replicas"]) for d in pending.values())
        console.info(
            f"  {len(pending)} partition(s) moving: {adding} replica(s) being added, {removing} being removed"
        )


def remove_broker(state: ClusterView, broker_id: int, wait_timeout: float, stop_timeout: float) -> int:
    """Drain every replica off the broker, stop it gracefully and take it out of the plan."""
    broker = brokerctl.lookup(state, broker_id)
    others = [b for b in state.planned_brokers() if b != broker_id]
    if not others:
        raise KctlError(f"broker {broker_id} is the cluster's only broker", ExitCode.CONFLICT)
    moved = 0
    if broker.state != brokerview.DEAD:
        moved = move(local_connection(state), others, wait_timeout, drain=True)
        brokerctl.stop(state, broker_id, stop_timeout)
    elif any(broker_id in r for r in _recorded_replicas(state)):
        raise KctlError(
            f"broker {broker_id} is not running but still holds replicas: start it "
            f"(`kctl broker start {broker_id}`) so they can be drained",
            ExitCode.CONFLICT,
        )
    ClusterPlan(state.cluster_dir).unplan_broker(broker_id)
    return moved


def _recorded_replicas(state: ClusterView) -> list[list[int]]:
    """Replica lists of every partition in the cluster metadata, read without a running broker."""
    return [p.replicas for t in state.topics().values() for p in t.partitions.values()]
