"""Where `kctl group reset-offsets` moves a group: Kafka's reset strategies as pure arithmetic.

The plan is computed once from offsets fetched once, printed, and with --execute committed
exactly as printed, so a dry run shows what an execution will do. New offsets are kept
inside the log ([log start, high watermark]), as kafka-consumer-groups.sh does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import END, START, OffsetSyntaxError, Position, parse, resolve
from kctl.shell.offsets import Kind as OffsetKind


class Kind(Enum):
    EARLIEST = "to-earliest"
    LATEST = "to-latest"
    OFFSET = "to-offset"
    SHIFT = "shift-by"
    DATETIME = "to-datetime"


@dataclass(frozen=True)
class Strategy:
    kind: Kind
    value: int = 0  # the offset, the shift, or the timestamp in ms


@dataclass(frozen=True)
class Current:
    """One partition as the cluster reports it before the reset."""

    topic: str
    partition: int
    committed: int | None
    log_start: int | None
    high_watermark: int | None
    time_offset: int | None = None  # first offset at or after the --to-datetime time; -1: none


def choose(
    earliest: bool,
    latest: bool,
    offset: int | None,
    shift: int | None,
    datetime_text: str | None,
    now_ms: int,
) -> Strategy:
    """The one strategy the options name; none or several is a usage error."""
    given = [
        s
        for s in (
            Strategy(Kind.EARLIEST) if earliest else None,
            Strategy(Kind.LATEST) if latest else None,
            Strategy(Kind.OFFSET, offset) if offset is not None else None,
            Strategy(Kind.SHIFT, shift) if shift is not None else None,
            _datetime(datetime_text, now_ms) if datetime_text is not None else None,
        )
        if s is not None
    ]
    if len(given) != 1:
        raise KctlError(
            "give exactly one of --to-earliest, --to-latest, --to-offset N, --shift-by N, --to-datetime T",
            ExitCode.USAGE,
        )
    return given[0]


def _datetime(text: str, now_ms: int) -> Strategy:
    """The timestamps `kctl consume -o @T` takes: ms, s, YYYY-MM-DD[THH:MM:SS], RFC3339, -10m."""
    try:
        spec = parse("@" + text, now_ms)
    except OffsetSyntaxError as exc:
        raise KctlError(f"invalid --to-datetime: {exc}", ExitCode.INVALID_INPUT) from None
    if spec.start.kind is not OffsetKind.TIME or spec.stop is not None:
        raise KctlError(f"invalid --to-datetime {text!r}: expected one timestamp", ExitCode.INVALID_INPUT)
    return Strategy(Kind.DATETIME, spec.start.value)


def new_offset(strategy: Strategy, current: Current) -> int:
    """The offset the group will resume from on this partition."""
    if current.log_start is None or current.high_watermark is None:
        raise KctlError(
            f"cannot read the offsets of {current.topic}/{current.partition} (is it offline?)",
            ExitCode.UNREACHABLE,
        )
    return resolve(
        _position(strategy, current), current.log_start, current.high_watermark, current.time_offset
    )


def _position(strategy: Strategy, current: Current) -> Position:
    """The strategy in `kctl consume -o` terms, whose resolve() keeps offsets inside the log."""
    kind = strategy.kind
    if kind is Kind.SHIFT:
        if current.committed is None:
            raise KctlError(
                f"{current.topic}/{current.partition} has no committed offset to "
                "shift from; use --to-offset, --to-earliest or --to-latest",
                ExitCode.INVALID_INPUT,
            )
        return Position(OffsetKind.OFFSET, current.committed + strategy.value)
    if kind is Kind.DATETIME:
        return Position(OffsetKind.TIME, strategy.value)
    if kind is Kind.OFFSET:
        return Position(OffsetKind.OFFSET, strategy.value)
    return START if kind is Kind.EARLIEST else END
