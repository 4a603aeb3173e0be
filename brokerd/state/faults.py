"""Faults kctl injects into a running broker, `faults/<id>.json`: for now a replication
throttle (`kctl broker throttle`), to show a slow follower hold the high watermark back and
leave the ISR. Only kctl writes these files, one per broker, and the broker re-reads its own
every tick, so no lock is needed."""

from __future__ import annotations

from brokerd.state.directory import StateDirectory, read_json, write_json


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
        return doc.get("replication_bytes_per_s")
