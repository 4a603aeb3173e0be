"""`kctl produce --rate`: at most N records per second, paced per batch of records.

The send loop only counts records; every `batch_size(rate)` of them it hands the count to a
token bucket, which sleeps off any debt. So pacing costs one clock read per batch, not per
record, and the rate holds on average over any second or longer.
"""

from __future__ import annotations

import re
import time

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

PACING_HZ = 20  # batches per second: smooth to the eye, coarse enough to cost nothing

_RATE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:/\s*s)?\s*", re.IGNORECASE)


def parse_rate(text: str) -> float:
    """'N/s' or 'N' records per second, N > 0 (fractions allowed: 0.5/s is one record every 2 s)."""
    found = _RATE.fullmatch(text)
    rate = float(found[1]) if found else 0.0
    if rate <= 0:
        raise KctlError(
            f"invalid --rate {text!r}: expected records per second, e.g. 100/s or 100", ExitCode.INVALID_INPUT
        )
    return rate


def batch_size(rate: float) -> int:
    """Records per pacing step: about 1/PACING_HZ s worth, rounded down to a power of two so
    the send loop can test its counter with a mask."""
    return 1 << max(0, int(rate / PACING_HZ).bit_length() - 1)


class TokenBucket:
    """Tokens refill at `rate` per second up to `burst`; taking more than there are sleeps
    until the debt is paid, so a burst of `burst` records goes out at once and no more."""

    def __init__(self, rate: float, burst: int):
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._last = time.monotonic()

    def take(self, n: int) -> None:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate) - n
        self._last = now
        if self._tokens < 0:
            time.sleep(-self._tokens / self.rate)
