"""The broker plan, `cluster.json`: the cluster id and the brokers `kctl cluster up` starts,
with their ports. Kafka keeps the cluster id in every log directory's meta.properties; here
one machine runs every broker, so the plan also says which brokers the cluster has."""

from __future__ import annotations

import uuid
from pathlib import Path

from brokerd.state.directory import StateDirectory, read_json, write_json

PLAN = "cluster.json"
BROKER_ADDRESSES = "127.0.1.0/24"


def planned_host(broker_id: int) -> str:
    """The loopback address a broker of a local cluster listens on and connects from:
    127.0.1.ID. Every 127.x address is local on Linux, with nothing to set up, and brokers
    with addresses of their own can be cut apart by a packet filter (`kctl broker isolate`);
    clients keep 127.0.0.1."""
    return f"127.0.1.{broker_id}" if 1 <= broker_id <= 254 else "127.0.0.1"


class ClusterPlan(StateDirectory):
    def exists(self) -> bool:
        """Whether a cluster was initialized here (its plan is the first file written)."""
        return (self.dir / PLAN).exists()

    def broker_dir(self, broker_id: int) -> Path:
        """A planned broker's own directory: its data directory and its log."""
        return self.cluster_dir / "brokers" / str(broker_id)

    def _create_plan(self, broker_ports: dict[int, int]) -> str:
        """Write the plan of a new cluster, or keep the one there; returns the cluster id."""
        with self.write_lock():
            doc = read_json(self.dir / PLAN)
            if doc is None:
                doc = {
                    "cluster_id": uuid.uuid4().hex[:22],
                    "brokers": {str(b): p for b, p in sorted(broker_ports.items())},
                }
                write_json(self.dir / PLAN, doc)
        cluster_id: str = doc["cluster_id"]
        return cluster_id

    def cluster_id(self) -> str:
        cluster_id: str = read_json(self.dir / PLAN)["cluster_id"]
        return cluster_id

    def planned_brokers(self) -> dict[int, int]:
        """Broker id -> port of every planned broker, running or not."""
        doc = read_json(self.dir / PLAN, {"brokers": {}})
        return {int(b): int(p) for b, p in doc["brokers"].items()}

    def plan_broker(self, port: int) -> int:
        """Add a broker to the plan (the next free id, on ``port``) and return its id.

        Under the write lock, so two `kctl cluster add-broker` never pick the same id.
        """
        with self.updating(PLAN, None) as doc:
            broker_id = max((int(b) for b in doc["brokers"]), default=0) + 1
            doc["brokers"][str(broker_id)] = port
        self.broker_dir(broker_id).mkdir(parents=True, exist_ok=True)
        return broker_id

    def unplan_broker(self, broker_id: int) -> None:
        """Remove a (stopped, drained) broker from the plan, so `cluster up` no longer starts it."""
        with self.updating(PLAN, None) as doc:
            doc["brokers"].pop(str(broker_id), None)
