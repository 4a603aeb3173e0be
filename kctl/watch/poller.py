"""What the watch asks of servers that may answer late (group coordinators, a connect
worker), asked on a daemon thread so the dashboard refreshes on time: it shows the last
answer until the next one arrives."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class Poller(Generic[T]):
    """Calls `poll()` every `interval` seconds on a daemon thread; read `latest` any time."""

    def __init__(self, first: T, interval: float, name: str) -> None:
        self.latest = first
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def poll(self) -> T:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.latest = self.poll()
            self._stop.wait(self.interval)
