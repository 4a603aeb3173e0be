"""Where partitions start and end, as their leaders answer ListOffsets: one round for many
partitions at once. A partition that fails shows as None, so one offline partition does not
hide the others."""

from __future__ import annotations

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kctl.kafka.client import Connection

Partition = tuple[str, int]


def log_starts(conn: Connection, partitions: list[Partition]) -> dict[Partition, int | None]:
    """The first offset still in each partition's log (the low watermark)."""
    return _list_offsets(conn, partitions, OffsetSpec.earliest())


def high_watermarks(conn: Connection, partitions: list[Partition]) -> dict[Partition, int | None]:
    """Each partition's high watermark: the end of what its in-sync replicas have."""
    return _list_offsets(conn, partitions, OffsetSpec.latest())


def last_stable_offsets(conn: Connection, partitions: list[Partition]) -> dict[Partition, int | None]:
    """Where read_committed consumers stop: the high watermark, or the first offset of a
    transaction still open."""
    return _list_offsets(conn, partitions, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)


def offsets_for_time(
    conn: Connection, partitions: list[Partition], timestamp_ms: int
) -> dict[Partition, int | None]:
    """The first offset at or after a timestamp in each partition (-1: none yet)."""
    return _list_offsets(conn, partitions, OffsetSpec.for_timestamp(timestamp_ms))


def _list_offsets(
    conn: Connection,
    partitions: list[Partition],
    spec: OffsetSpec,
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> dict[Partition, int | None]:
    if not partitions:
        return {}
    futures = conn.admin().list_offsets(
        {TopicPartition(t, p): spec for t, p in partitions},
        isolation_level=isolation,
        request_timeout=conn.timeout,
    )
    offsets: dict[Partition, int | None] = {}
    for tp, future in futures.items():
        try:
            offsets[(tp.topic, tp.partition)] = future.result().offset
        except KafkaException:
            offsets[(tp.topic, tp.partition)] = None
    return offsets
