"""Futures waiting for something to change: a long-polled fetch or an acks=all produce sleeps
on several things at once (partitions, a follower's fetch session) and wakes on the first."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


class Waiters:
    """The futures waiting on one thing; ``wake`` answers them all, once."""

    def __init__(self) -> None:
        self._futures: list[asyncio.Future[None]] = []

    def add(self, future: asyncio.Future[None]) -> None:
        self._futures.append(future)

    def remove(self, future: asyncio.Future[None]) -> None:
        if future in self._futures:
            self._futures.remove(future)

    def wake(self) -> None:
        futures, self._futures = self._futures, []
        for future in futures:
            if not future.done():
                future.set_result(None)


async def wait_any(watched: Iterable[Waiters], timeout_s: float) -> bool:
    """Sleep until any of ``watched`` wakes; False when the time ran out first."""
    watched = list(watched)
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    for waiters in watched:
        waiters.add(future)
    try:
        await asyncio.wait_for(asyncio.shield(future), timeout_s)
        return True
    except TimeoutError:
        return False
    finally:
        for waiters in watched:
            waiters.remove(future)
