"""Which partitions `kctl consume` (and `kctl bench consume`) reads, and from which offset to
which.

The offset spec is resolved per partition against the watermarks fetched when consuming
starts, so `-e` means "the end as it was when I started", and `-N` means N before the end
of each partition (as in kcat), while `-n` counts records over all partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

from kctl.kafka import consumer as consumers
from kctl.kafka.client import Connection, Consumer, fetch_metadata, find_topic
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import Kind, OffsetRange, Position, resolve, resolve_stop


@dataclass(frozen=True)
class PartitionPlan:
    partition: int
    start: int
    stop: int | None  # exclusive; None: follow

    @property
    def empty(self) -> bool:
        return self.stop is not None and self.start >= self.stop


def plan(
    consumer: Consumer,
    conn: Connection,
    topic: str,
    partitions: list[int] | None,
    spec: OffsetRange,
    exit_at_end: bool,
) -> list[PartitionPlan]:
    meta = find_topic(fetch_metadata(consumer, conn, topic), topic)
    ids = partitions if partitions is not None else sorted(meta.partitions)
    missing = [p for p in ids if p not in meta.partitions]
    if missing:
        raise KctlError(
            f"topic {topic!r} has no partition {missing[0]} (it has 0..{len(meta.partitions) - 1})",
            ExitCode.NOT_FOUND,
        )
    marks = {p: consumers.watermarks(consumer, conn, topic, p) for p in ids}
    start_times = _time_offsets(consumer, conn, topic, ids, spec.start)
    stop_times = _time_offsets(consumer, conn, topic, ids, spec.stop)
    plans = []
    for p in ids:
        low, high = marks[p]
        start = resolve(spec.start, low, high, start_times.get(p))
        stop = None if spec.stop is None else resolve_stop(spec.stop, low, high, stop_times.get(p))
        if exit_at_end:
            stop = high if stop is None else min(stop, high)
        plans.append(PartitionPlan(p, start, stop))
    return plans


def _time_offsets(
    consumer: Consumer, conn: Connection, topic: str, ids: list[int], position: Position | None
) -> dict[int, int]:
    """Partition -> first offset at or after a timestamp position (-1: none yet)."""
    if position is None or position.kind is not Kind.TIME:
        return {}
    return consumers.offsets_for_time(consumer, conn, topic, ids, position.value)
