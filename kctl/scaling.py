"""Growing and shrinking the local cluster: plan a broker and start it, or drain it and stop it.

Replicas move with partition reassignment (kctl.reassign), the way Kafka's operators do it
with kafka-reassign-partitions.sh: new replicas catch up before old ones are dropped, so
producers with acks=all keep writing and no acknowledged record is lost.
"""

from __future__ import annotations

from brokerd.state import ClusterState

from kctl import brokerconfig, brokerctl, brokerview, localcluster, reassign
from kctl.kafka import client
from kctl.kafka.client import Connection, fetch_metadata
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

ADMIN_TIMEOUT_S = 10.0


def add_broker(state: ClusterState) -> int:
    """Plan the next broker id on a free port and start it; unplanned again if it fails to start."""
    port = localcluster.free_ports(1)[0]
    broker_id = state.plan_broker(port)
    try:
        planned = state.planned_brokers()
        settings = brokerconfig.effective(brokerconfig.remembered(state.cluster_dir), len(planned))
        localcluster.start_missing(state, {broker_id: port}, settings)
    except BaseException:
        state.unplan_broker(broker_id)
        raise
    return broker_id


def local_connection(state: ClusterState) -> Connection:
    """The local cluster's live brokers, whatever $KCTL_BOOTSTRAP says: these commands act on it."""
    return client.local_connection(state.cluster_dir, ADMIN_TIMEOUT_S)


def assignment(conn: Connection, internal: bool) -> dict[tuple[str, int], list[int]]:
    """Replicas of every partition; internal `__` topics only when asked (a drain must move them)."""
    metadata = fetch_metadata(conn.admin(), conn)
    return {(name, p): list(meta.partitions[p].replicas)
            for name, meta in metadata.topics.items() if internal or not name.startswith("__")
            for p in meta.partitions}


def move(conn: Connection, brokers: list[int], wait_timeout: float, drain: bool = False) -> int:
    """Reassign replicas onto `brokers` and wait until done; returns the partitions moved.

    A rebalance evens out the user's topics; a drain moves only what sits elsewhere,
    internal topics included, so the fewest records travel.
    """
    plan = reassign.balanced(assignment(conn, internal=drain), brokers, even=not drain)
    if plan:
        reassign.alter(conn, plan)
        console.info(f"Moving {len(plan)} partition(s) over brokers {', '.join(map(str, brokers))}...")
        reassign.wait(conn, set(plan), wait_timeout, _progress)
    return len(plan)


def _progress(pending: dict) -> None:
    """Progress for a long move: how many partitions are still adding or removing replicas."""
    if pending:
        adding = sum(len(d["adding_replicas"]) for d in pending.values())
        removing = sum(len(d["removing_replicas"]) for d in pending.values())
        console.info(f"  {len(pending)} partition(s) moving: {adding} replica(s) being added, "
                     f"{removing} being removed")


def remove_broker(state: ClusterState, broker_id: int, wait_timeout: float, stop_timeout: float) -> int:
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
        raise KctlError(f"broker {broker_id} is not running but still holds replicas: start it "
                        f"(`kctl broker start {broker_id}`) so they can be drained", ExitCode.CONFLICT)
    state.unplan_broker(broker_id)
    return moved


def _recorded_replicas(state: ClusterState) -> list[list[int]]:
    """Replica lists of every partition in the cluster metadata, read without a running broker."""
    return [p.replicas for t in state.topics().values() for p in t.partitions.values()]
