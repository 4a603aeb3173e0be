"""Ctrl-C that lands while confluent-kafka runs one of kctl's Python callbacks (a rebalance
line, the cluster watch) inside Consumer.consume(): the KeyboardInterrupt raised in the
callback does not come out of consume(), which fails with a SystemError ("returned NULL
without setting an exception") instead. Remembering that SIGINT arrived lets the command
treat that SystemError as the interrupt it is and exit 130 like any other Ctrl-C.
"""

from __future__ import annotations

import signal
from types import FrameType, TracebackType
from typing import Any


class Interrupts:
    """Within ``with``, SIGINT still raises KeyboardInterrupt, and ``seen`` says it came."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None

    def __enter__(self) -> Interrupts:
        self._previous = signal.signal(signal.SIGINT, self._interrupted)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        signal.signal(signal.SIGINT, self._previous)

    def _interrupted(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt
