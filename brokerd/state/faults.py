"""Faults kctl injects into a running cluster.

`faults/<id>.json`: a replication throttle (`kctl broker throttle`), to show a slow follower
hold the high watermark back and leave the ISR. Only kctl writes these files, one per broker,
and the broker re-reads its own every tick, so no lock is needed.

`faults/network.json`: the network faults in force (`kctl broker isolate`, `kctl cluster
partition`, `kctl broker netem`). kctl's packet filter drops the packets; this document says
what it drops, for `kctl cluster status` and the watch, and which brokers are cut off from the
controller quorum, which the brokers themselves read (StateDirectory.reaches_quorum), since
the state directory is reached through the file system, not the network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from brokerd.state.directory import NETWORK_FAULTS, JsonObject, StateDirectory, read_json, write_json

CLIENTS = "clients"
Node = int | str  # a broker id, or CLIENTS: every process that is not one of the brokers


@dataclass(frozen=True)
class NetworkFaults:
    """What the network does to the cluster's packets now."""

    cuts: frozenset[tuple[Node, Node]] = frozenset()  # (sender, receiver): what it sends is lost
    cut_from_quorum: frozenset[int] = frozenset()
    loss: Mapping[int, int] = field(default_factory=dict)  # broker id -> % of its packets lost

    def __bool__(self) -> bool:
        return bool(self.cuts or self.cut_from_quorum or self.loss)

    def brokers(self) -> set[int]:
        """Every broker some fault applies to."""
        ends = {node for cut in self.cuts for node in cut if isinstance(node, int)}
        return ends | set(self.cut_from_quorum) | set(self.loss)

    def without(self, broker_ids: set[int]) -> NetworkFaults:
        """These faults with none left on ``broker_ids`` (healed, or the brokers are gone)."""
        return NetworkFaults(
            frozenset(cut for cut in self.cuts if not broker_ids & set(cut)),
            self.cut_from_quorum - broker_ids,
            {b: p for b, p in self.loss.items() if b not in broker_ids},
        )

    def to_json(self) -> JsonObject:
        return {
            "cuts": sorted([list(cut) for cut in self.cuts], key=str),
            "cut_from_quorum": sorted(self.cut_from_quorum),
            "loss": {str(b): p for b, p in sorted(self.loss.items())},
        }

    @classmethod
    def from_json(cls, doc: JsonObject) -> NetworkFaults:
        return cls(
            frozenset((sender, receiver) for sender, receiver in doc.get("cuts", [])),
            frozenset(doc.get("cut_from_quorum", [])),
            {int(b): int(p) for b, p in doc.get("loss", {}).items()},
        )


class InjectedFaults(StateDirectory):
    def set_replication_throttle(self, broker_id: int, bytes_per_s: int | None) -> None:
        """Slow (or, with None, stop slowing) what a broker copies as a follower."""
        path = self.dir / "faults" / f"{broker_id}.json"
        if bytes_per_s is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(exist_ok=True)
            write_json(path, {"replication_bytes_per_s": bytes_per_s})

    def replication_throttle(self, broker_id: int) -> int | None:
        doc = read_json(self.dir / "faults" / f"{broker_id}.json", {})
        throttle: int | None = doc.get("replication_bytes_per_s")
        return throttle

    def network_faults(self) -> NetworkFaults:
        return NetworkFaults.from_json(read_json(self.dir / NETWORK_FAULTS, {}))

    def change_network_faults(self, change: Callable[[NetworkFaults], NetworkFaults]) -> NetworkFaults:
        """Replace the network faults by ``change`` of them, under the write lock; the
        document goes when no fault is left. Returns the faults now in force."""
        path = self.dir / NETWORK_FAULTS
        with self.write_lock():
            changed = change(self.network_faults())
            if changed:
                path.parent.mkdir(exist_ok=True)
                write_json(path, changed.to_json())
            else:
                path.unlink(missing_ok=True)
        return changed
