"""A consumer's side of `kctl consume` and `kctl bench consume`: where each partition starts and
ends as the consumer sees it (with read_committed, the end is the last stable offset), the
partitions it reads (assigned, or handed out by its group), what it commits, and noticing a
cluster that went away while it waits for records."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kctl.kafka.client import Connection, fetch_metadata
from kctl.kafka.errors import exit_code_for, from_kafka
from kctl.shell.errors import KctlError

# Message is what a consumer hands out: commands annotate with it.
__all__ = ["ClusterWatch", "Message", "assign", "commit", "offsets_for_time", "subscribe", "watermarks"]

LEADER_MOVING = {
    KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
}
LEADER_MOVING_BACKOFF_S = 0.1


def watermarks(consumer: Consumer, conn: Connection, topic: str, p: int) -> tuple[int, int]:
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


def offsets_for_time(
    consumer: Consumer, conn: Connection, topic: str, partitions: list[int], timestamp_ms: int
) -> dict[int, int]:
    """Partition -> first offset at or after a timestamp (-1: none yet)."""
    query = [TopicPartition(topic, p, timestamp_ms) for p in partitions]
    try:
        found = consumer.offsets_for_times(query, timeout=conn.timeout)
    except KafkaException as exc:
        raise from_kafka(exc, f"look up offsets by time in {topic}") from None
    return {tp.partition: tp.offset for tp in found}


def assign(consumer: Consumer, topic: str, starts: dict[int, int]) -> None:
    """Read these partitions of `topic`, each from its start offset (no group)."""
    consumer.assign([TopicPartition(topic, p, offset) for p, offset in starts.items()])


def subscribe(
    consumer: Consumer,
    topic: str,
    assigned: Callable[[list[int]], None],
    revoked: Callable[[list[int]], None],
    lost: Callable[[list[int]], None],
) -> None:
    """Join the consumer's group on `topic`; each rebalance calls back with the partitions it
    assigned, revoked or lost (the group moved on without this member), in order."""

    def partitions(callback: Callable[[list[int]], None]) -> Callable[[Consumer, list[TopicPartition]], None]:
        return lambda _consumer, tps: callback(sorted(tp.partition for tp in tps))

    consumer.subscribe(
        [topic], on_assign=partitions(assigned), on_revoke=partitions(revoked), on_lost=partitions(lost)
    )


def commit(consumer: Consumer, topic: str, positions: dict[int, int]) -> tuple[int | None, str] | None:
    """Commit, and wait for, the offset each partition of `topic` resumes from. None when
    committed; else the partition that failed (None: the whole commit) and why."""
    try:
        done = consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in sorted(positions.items())], asynchronous=False
        )
    except KafkaException as exc:
        return None, exc.args[0].str()
    for tp in done or []:
        if tp.error is not None:
            return tp.partition, tp.error.str()
    return None


class ClusterWatch:
    """librdkafka's error callback. It retries most errors by itself, but when it reports
    every broker down, kctl checks whether the cluster still answers and gives up if not."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.error: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.code() == KafkaError._ALL_BROKERS_DOWN or error.fatal():
            self.error = error

    def check(self, consumer: Consumer) -> None:
        error, self.error = self.error, None
        if error is None:
            return
        if error.fatal():
            raise KctlError(f"cannot consume: {error.str()}", exit_code_for(error))
        fetch_metadata(consumer, self.conn)
