"""The `-o/--offset` grammar of `kctl consume`: rpk's, plus kcat's and Kafka's words.

Pure parsing and arithmetic, no I/O: `parse()` turns the text into an OffsetRange, and
`resolve()` turns one of its positions into a concrete offset once the caller has fetched a
partition's watermarks (and, for timestamps, the offset librdkafka found for that time).

    start | oldest | beginning | earliest     the first offset still in the log
    end | newest | latest                    the end: only records produced from now on
    N                                        exactly offset N (N: is the same)
    +N / -N                                  N after the start / N before the end, per partition
    A:B  A-B  :B  :end                       from A (default start) until B or the current end, exclusive
    @T  @T:  @:T  @T1:T2                     by timestamp; T2 may be a duration after T1 (@T:1h)
    s@T  e@T                                 kcat's spellings of @T and @:T

A timestamp T is 13 digits (ms), 10 digits (s), YYYY-MM-DD, RFC3339, `end`, or a duration
before now such as -10m or -1h30m (Go syntax: h, m, s, ms, us, ns).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum


class Kind(Enum):
    START = "start"
    END = "end"
    OFFSET = "offset"
    AFTER_START = "after_start"
    BEFORE_END = "before_end"
    TIME = "time"


@dataclass(frozen=True)
class Position:
    kind: Kind
    value: int = 0


@dataclass(frozen=True)
class OffsetRange:
    """Where to start, and where to stop (exclusive; None: follow forever)."""

    start: Position
    stop: Position | None = None


class OffsetSyntaxError(ValueError):
    pass


START = Position(Kind.START)
END = Position(Kind.END)

_START_WORDS = {"start", "oldest", "beginning", "earliest"}
_END_WORDS = {"end", "newest", "latest"}
_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION = r"[+-]?(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+"
_DATE = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|z|[+-]\d{2}:?\d{2})?)?"
_STAMP = rf"(?:\d{{13}}|\d{{10}}|{_DATE}|{_DURATION}|end)"
_TIME_RANGE = re.compile(rf"@(?P<a>{_STAMP})?(?::(?P<b>{_STAMP})?)?")
_OFFSET_RANGE = re.compile(r"(?P<a>[+-]?\d+|[a-z]+)?(?P<sep>:)?(?P<b>\d+|[a-z]+)?")
_HINT = (
    "expected start, end, N, +N, -N, A:B, :end, @TIMESTAMP or @T1:T2 "
    "(timestamps: 13-digit ms, 10-digit s, YYYY-MM-DD, RFC3339, or -10m)"
)


def parse(text: str, now_ms: int) -> OffsetRange:
    """Parse an offset spec; `now_ms` anchors durations such as @-10m."""
    spec = text.strip()
    if spec.lower() in _START_WORDS:
        return OffsetRange(START)
    if spec.lower() in _END_WORDS:
        return OffsetRange(END)
    if spec.startswith(("s@", "e@")):
        spec = "@" + spec[2:] if spec[0] == "s" else "@:" + spec[2:]
    if spec.startswith("@"):
        return _parse_time_range(text, spec, now_ms)
    if re.fullmatch(r"\d+-\d+", spec):
        spec = spec.replace("-", ":")
    return _parse_offset_range(text, spec)


def _parse_offset_range(text: str, spec: str) -> OffsetRange:
    match = _OFFSET_RANGE.fullmatch(spec.lower())
    if match is None or not spec:
        raise OffsetSyntaxError(f"invalid offset {text!r}: {_HINT}")
    a, sep, b = match["a"], match["sep"], match["b"]
    start = _offset_position(text, a) if a else START
    stop = _stop_position(text, b) if sep and b else None
    if not sep and b:
        raise OffsetSyntaxError(f"invalid offset {text!r}: {_HINT}")
    if (
        start.kind is Kind.OFFSET
        and stop is not None
        and stop.kind is Kind.OFFSET
        and stop.value < start.value
    ):
        raise OffsetSyntaxError(f"invalid offset {text!r}: the range ends before it starts")
    return OffsetRange(start, stop)


def _offset_position(text: str, token: str) -> Position:
    if token in _START_WORDS:
        return START
    if token in _END_WORDS:
        return END
    if token.startswith("+"):
        return Position(Kind.AFTER_START, int(token[1:]))
    if token.startswith("-"):
        return Position(Kind.BEFORE_END, int(token[1:]))
    if token.isdigit():
        return Position(Kind.OFFSET, int(token))
    raise OffsetSyntaxError(f"invalid offset {text!r}: unknown word {token!r}; {_HINT}")


def _stop_position(text: str, token: str) -> Position:
    if token in _END_WORDS:
        return END
    if token.isdigit():
        return Position(Kind.OFFSET, int(token))
    raise OffsetSyntaxError(f"invalid offset {text!r}: a range must end at an offset or 'end'")


def _parse_time_range(text: str, spec: str, now_ms: int) -> OffsetRange:
    match = _TIME_RANGE.fullmatch(spec)
    if match is None or spec in ("@", "@:"):
        raise OffsetSyntaxError(f"invalid timestamp offset {text!r}: {_HINT}")
    a, b = match["a"], match["b"]
    start = _time_position(text, a, now_ms, None) if a else START
    stop = _time_position(text, b, now_ms, start) if b else None
    if start.kind is Kind.TIME and stop is not None and stop.kind is Kind.TIME and stop.value < start.value:
        raise OffsetSyntaxError(f"invalid offset {text!r}: the time range ends before it starts")
    return OffsetRange(start, stop)


def _time_position(text: str, token: str, now_ms: int, start: Position | None) -> Position:
    """A timestamp token as a position; an unsigned duration counts from `start`."""
    if token == "end":
        return END
    if re.fullmatch(_DURATION, token):
        delta_ms = duration_ms(token)
        if token[0] in "+-":
            return Position(Kind.TIME, now_ms + delta_ms)
        if start is None or start.kind is not Kind.TIME:
            raise OffsetSyntaxError(
                f"invalid offset {text!r}: a duration needs a sign (-10m is ten minutes ago) "
                "unless it follows a start timestamp (@T:1h)"
            )
        return Position(Kind.TIME, start.value + delta_ms)
    return Position(Kind.TIME, timestamp_ms(token))


def duration_ms(token: str) -> int:
    """Go-style duration text (-1h30m, 1m3ms) in milliseconds."""
    sign = -1 if token.startswith("-") else 1
    total_ns = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", token):
        total_ns += float(number) * _UNIT_NS[unit]
    return sign * int(total_ns // 1_000_000)


def timestamp_ms(token: str) -> int:
    """An absolute timestamp token in milliseconds since the epoch (naive dates are UTC)."""
    if token.isdigit():
        return int(token) if len(token) == 13 else int(token) * 1000
    try:
        moment = datetime.fromisoformat(token.replace("z", "Z"))
    except ValueError as exc:
        raise OffsetSyntaxError(f"invalid timestamp {token!r}: {exc}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def resolve(position: Position, low: int, high: int, time_offset: int | None = None) -> int:
    """The concrete offset of `position` in a partition whose log spans [low, high).

    Offsets outside the log are clamped into it, as a consumer would be reset; for a TIME
    position the caller passes the offset librdkafka found for that time (-1: none yet).
    """
    kind = position.kind
    if kind is Kind.START:
        return low
    if kind is Kind.END:
        return high
    if kind is Kind.AFTER_START:
        return min(low + position.value, high)
    if kind is Kind.BEFORE_END:
        return max(high - position.value, low)
    if kind is Kind.TIME:
        return high if time_offset is None or time_offset < 0 else max(time_offset, low)
    return min(max(position.value, low), high)


def resolve_stop(position: Position, low: int, high: int, time_offset: int | None = None) -> int:
    """Like resolve(), but an exact stop offset beyond the end is kept: it is waited for."""
    if position.kind is Kind.OFFSET:
        return max(position.value, low)
    return resolve(position, low, high, time_offset)
