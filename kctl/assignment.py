"""Which partitions `kctl consume` reads, and from which offset to which.

The offset spec is resolved per partition against the watermarks fetched when consuming
starts, so `-e` means "the end as it was when I started", and `-N` means N before the end
of each partition (as in kcat), while `-n` counts records over all partitions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kctl.kafka.client import Connection, fetch_metadata, find_topic
from kctl.kafka.errors import from_kafka
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import Kind, OffsetRange, Position, resolve, resolve_stop

LEADER_MOVING = {KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.LEADER_NOT_AVAILABLE,
                 KafkaError.NOT_LEADER_FOR_PARTITION}
LEADER_MOVING_BACKOFF_S = 0.1


@dataclass(frozen=True)
class PartitionPlan:
    partition: int
    start: int
    stop: int | None  # exclusive; None: follow

    @property
    def empty(self) -> bool:
        return self.stop is not None and self.start >= self.stop


def parse_partitions(values: list[str] | None) -> list[int] | None:
    """`-p 0 -p 2` and `-p 0,2` alike; None means every partition."""
    if not values:
        return None
    try:
        return sorted({int(p) for v in values for p in v.split(",") if p.strip()})
    except ValueError:
        raise KctlError(f"invalid partition list {','.join(values)!r}: expected numbers like 0,2",
                        ExitCode.INVALID_INPUT) from None


def plan(consumer: Consumer, conn: Connection, topic: str, partitions: list[int] | None,
         spec: OffsetRange, exit_at_end: bool) -> list[PartitionPlan]:
    meta = find_topic(fetch_metadata(consumer, conn, topic), topic)
    ids = partitions if partitions is not None else sorted(meta.partitions)
    missing = [p for p in ids if p not in meta.partitions]
    if missing:
        raise KctlError(f"topic {topic!r} has no partition {missing[0]} "
                        f"(it has 0..{len(meta.partitions) - 1})", ExitCode.NOT_FOUND)
    marks = {p: _watermarks(consumer, conn, topic, p) for p in ids}
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


def _watermarks(consumer: Consumer, conn: Connection, topic: str, p: int) -> tuple[int, int]:
    """The partition's watermarks. Right after a leader change the new leader may answer
    OFFSET_NOT_AVAILABLE (or not lead yet) for a moment; that is asked again until the
    timeout, where librdkafka would hand the error straight back."""
    deadline = time.monotonic() + conn.timeout
    while True:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=conn.timeout)
        except KafkaException as exc:
            if exc.args[0].code() not in LEADER_MOVING or time.monotonic() >= deadline:
                raise from_kafka(exc, f"get the offsets of {topic}/{p}") from None
            time.sleep(LEADER_MOVING_BACKOFF_S)


def _time_offsets(consumer: Consumer, conn: Connection, topic: str, ids: list[int],
                  position: Position | None) -> dict[int, int]:
    """Partition -> first offset at or after a timestamp position (-1: none yet)."""
    if position is None or position.kind is not Kind.TIME:
        return {}
    query = [TopicPartition(topic, p, position.value) for p in ids]
    try:
        found = consumer.offsets_for_times(query, timeout=conn.timeout)
    except KafkaException as exc:
        raise from_kafka(exc, f"look up offsets by time in {topic}") from None
    return {tp.partition: tp.offset for tp in found}
