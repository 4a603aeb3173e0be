"""The connectors of the local cluster's connect worker for `kctl watch`, asked of its REST
API in the background (as groups are, kctl.watch.groupwatch): a worker busy starting Spark
answers late, and the dashboard refreshes on time meanwhile. Without a running worker the
watch shows no connectors."""

from __future__ import annotations

import threading
from pathlib import Path

from kctl.cluster import localservice
from kctl.connect import status
from kctl.connect.client import ConnectClient
from kctl.shell.errors import KctlError


def poll_once(cluster_dir: Path) -> dict | None:
    """`{"url", "connectors", "error"}` of the running worker, or None when none runs."""
    running = localservice.running(cluster_dir, localservice.CONNECT)
    if running is None:
        return None
    try:
        return {"url": running.url, "connectors": status.fetch(ConnectClient(running.url)), "error": None}
    except KctlError as exc:
        return {"url": running.url, "connectors": [], "error": exc.message}


class ConnectPoller:
    """Asks every `interval` seconds on a daemon thread; read `latest` any time."""

    def __init__(self, cluster_dir: Path, interval: float):
        self.cluster_dir = cluster_dir
        self.interval = interval
        self.latest: dict | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kctl-watch-connect", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.latest = poll_once(self.cluster_dir)
            self._stop.wait(self.interval)
