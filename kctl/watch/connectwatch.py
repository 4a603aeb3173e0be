"""The connectors of the local cluster's connect worker for `kctl watch`, asked of its REST
API in the background (as groups are, kctl.watch.groupwatch): a worker busy starting Spark
answers late, and the dashboard refreshes on time meanwhile. Without a running worker the
watch shows no connectors."""

from __future__ import annotations

from pathlib import Path

from kctl.cluster import localservice
from kctl.connect import status
from kctl.connect.client import ConnectClient
from kctl.shell.errors import KctlError
from kctl.watch.poller import Poller


def poll_once(cluster_dir: Path) -> dict | None:
    """`{"url", "connectors", "error"}` of the running worker, or None when none runs."""
    running = localservice.running(cluster_dir, localservice.CONNECT)
    if running is None:
        return None
    try:
        return {"url": running.url, "connectors": status.fetch(ConnectClient(running.url)), "error": None}
    except KctlError as exc:
        return {"url": running.url, "connectors": [], "error": exc.message}


class ConnectPoller(Poller[dict | None]):
    """Asks every `interval` seconds on a daemon thread; read `latest` any time."""

    def __init__(self, cluster_dir: Path, interval: float):
        super().__init__(None, interval, "kctl-watch-connect")
        self.cluster_dir = cluster_dir

    def poll(self) -> dict | None:
        return poll_once(self.cluster_dir)
