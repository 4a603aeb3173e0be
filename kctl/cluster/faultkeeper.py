"""`python -m kctl.cluster.faultkeeper CLUSTER_DIR`: heals the network faults nobody else will.

A packet rule outlives the process that made it, so each cluster with network faults in force
has one keeper in the background (kctl starts it with the first fault). It heals the faults
of a broker whose process has died (killed, or stopped by `kctl cluster down`), heals
everything when it is asked to stop (SIGTERM, SIGINT, SIGHUP), and exits once no fault is
left. One keeper per cluster: it holds `<cluster>/netfaults/keeper.lock` while it runs.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout

from brokerd.state.cluster_view import ClusterView, open_view
from brokerd.state.faults import NetworkFaults
from kctl.cluster import netfaults

POLL_S = 0.1


def ensure_running(cluster_dir: Path) -> None:
    """Start the cluster's keeper unless one runs (it exits at once if another holds the lock)."""
    directory = Path(cluster_dir) / netfaults.DIRECTORY
    if _held(directory / "keeper.lock"):
        return
    with open(directory / "keeper.log", "ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "kctl.cluster.faultkeeper", str(cluster_dir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # not stopped by the Ctrl-C of the command that started it
        )


def _held(lock_path: Path) -> bool:
    try:
        with FileLock(str(lock_path), timeout=0):
            return False
    except Timeout:
        return True


def keep(state: ClusterView, stop: threading.Event) -> None:
    """Until no fault is left or ``stop`` is set: heal the faults of brokers that died."""
    while not stop.wait(POLL_S):
        faults = state.network_faults()
        if not faults:
            return
        dead = {b for b in faults.brokers() if not state.is_alive(b)}
        if dead:
            netfaults.change(state, _without(dead))


def _without(broker_ids: set[int]) -> Callable[[NetworkFaults], NetworkFaults]:
    return lambda faults: faults.without(broker_ids)


def main(argv: list[str]) -> int:
    cluster_dir = Path(argv[0])
    state = open_view(cluster_dir)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    lock = FileLock(str(cluster_dir / netfaults.DIRECTORY / "keeper.lock"), timeout=0)
    # a fault made while this keeper was leaving found the lock held and started none: so
    # once the lock is released, the keeper looks again
    while not stop.is_set():
        try:
            with lock:
                try:
                    keep(state, stop)
                finally:
                    if stop.is_set():
                        netfaults.heal_all(state)
        except Timeout:
            return 0  # another keeper has this cluster
        if not state.network_faults():
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
