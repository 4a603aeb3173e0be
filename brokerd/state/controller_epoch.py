"""The controller and its epoch: `controller.json` says which broker is the active controller
and at which controller epoch, `fenced-controller.json` the last controller found stale.

The controller epoch only grows, and a controller's metadata records are fenced by it
(check_controller_epoch): a controller paused past its lease wakes up as a zombie, its first
write is refused before anything is appended, and it resigns. KRaft fences the same way with
the Raft leader epoch; ZooKeeper-mode Kafka with the controller epoch znode.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from brokerd.state.directory import JsonObject, StateDirectory, read_json, write_json

CONTROLLER = "controller.json"
FENCED_CONTROLLER = "fenced-controller.json"


class StaleControllerEpoch(Exception):
    """A write from a controller whose epoch is lower than the current one (a zombie)."""


def current_controller(state_dir: Path) -> tuple[int, int] | None:
    """(broker id, controller epoch) of the active controller; None before the first claim."""
    doc = read_json(state_dir / CONTROLLER)
    return None if doc is None else (doc["broker_id"], doc["epoch"])


def check_controller_epoch(state_dir: Path, controller_epoch: int) -> None:
    """Refuse a write from an epoch below the current controller's (the caller holds the
    write lock, so no claim can come in between the check and the write)."""
    current = current_controller(state_dir)
    if current is not None and controller_epoch < current[1]:
        raise StaleControllerEpoch(f"controller epoch {controller_epoch} < {current[1]}")


class ControllerEpochs(StateDirectory):
    def controller(self) -> tuple[int, int] | None:
        return current_controller(self.dir)

    def claim_controller(self, broker_id: int, is_live: Callable[[int], bool]) -> int | None:
        """Become controller unless a live broker already is; returns the new controller epoch.

        The claim is made under the exclusive write lock and the epoch only grows, so at most
        one broker holds the current epoch. A paused controller loses its lease, and with it
        the controllership: when it wakes up its epoch is stale and its writes are refused.
        """

        def holder() -> JsonObject:
            doc: JsonObject = read_json(self.dir / CONTROLLER, {"broker_id": -1, "epoch": 0})
            return doc

        def held_by_another(doc: JsonObject) -> bool:
            return doc["broker_id"] != broker_id and is_live(doc["broker_id"])

        if held_by_another(holder()):  # the common case, answered without taking the lock
            return None
        with self.write_lock():
            doc = holder()
            if held_by_another(doc):
                return None
            epoch: int = doc["epoch"] + 1
            write_json(self.dir / CONTROLLER, {"broker_id": broker_id, "epoch": epoch})
        return epoch

    def record_fenced_controller(self, broker_id: int, stale_epoch: int) -> None:
        """A controller that wakes up (after a pause, say) to a newer controller epoch has been
        fenced: it resigns, and this record lets `kctl watch` show the moment."""
        with self.write_lock():
            current = self.controller()
            write_json(
                self.dir / FENCED_CONTROLLER,
                {
                    "broker_id": broker_id,
                    "epoch": stale_epoch,
                    "current_epoch": None if current is None else current[1],
                    "time": round(time.time(), 3),
                },
            )

    def fenced_controller(self) -> JsonObject | None:
        fenced: JsonObject | None = read_json(self.dir / FENCED_CONTROLLER)
        return fenced
