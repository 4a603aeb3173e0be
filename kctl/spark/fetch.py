"""Reading one offset range of one partition, in chunks, on an executor.

The range is read with its own librdkafka consumer, assigned (no group membership, nothing
committed), so any number of tasks can read any ranges of any Kafka-compatible cluster.
A range is done when the consumer's position reaches its end, not when a record with offset
end-1 arrives: compacted topics and transaction markers leave gaps in offsets.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import cast

from confluent_kafka import Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaPartition

from kctl.kafka.record import Record
from kctl.spark.planning import DataLossError, OffsetRange

CHUNK = 10_000  # records per chunk: Spark's default Arrow batch size
POLL_S = 0.2


def read_range(
    client: dict[str, str], r: OffsetRange, fail_on_data_loss: bool, timeout_s: float, chunk: int = CHUNK
) -> Iterator[list[Record]]:
    """Yield the records of [r.start, r.end) in order, at most `chunk` per list.

    Waits up to `timeout_s` for records that do not come (kafkaConsumer.pollTimeoutMs);
    records deleted by retention or truncation are a DataLossError with failOnDataLoss,
    and are skipped without it.
    """
    # librdkafka insists on a group id even for assign(); no offset is ever committed to it.
    consumer = Consumer(
        {
            "group.id": "kctl-spark",
            **client,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        }
    )
    try:
        consumer.assign([KafkaPartition(r.topic, r.partition, r.start)])
        yield from _chunks(consumer, r, fail_on_data_loss, timeout_s, chunk)
    finally:
        consumer.close()


def _chunks(
    consumer: Consumer, r: OffsetRange, fail_on_data_loss: bool, timeout_s: float, chunk: int
) -> Iterator[list[Record]]:
    position = r.start
    pending: list[Record] = []
    deadline = time.monotonic() + timeout_s
    while position < r.end:
        before = position
        fetched = consumer.consume(min(chunk - len(pending), r.end - position), timeout=POLL_S)
        # one pass in C-speed comprehension; a message without an error is a Record
        records = cast(list[Record], [m for m in fetched if m.error() is None])
        if len(records) < len(fetched):
            position = _handle_events(consumer, r, fetched, position, fail_on_data_loss)
        if records:
            position = max(position, records[-1].offset() + 1)
            if records[-1].offset() >= r.end:  # a fetched batch may reach past the range
                records = [m for m in records if m.offset() < r.end]
            pending += records
        if len(pending) >= chunk:
            yield pending
            pending = []
        if position > before:
            deadline = time.monotonic() + timeout_s
        elif time.monotonic() > deadline:
            message = (
                f"no record of {r.topic}/{r.partition} at offset {position} arrived within "
                f"{timeout_s:g}s (kafkaConsumer.pollTimeoutMs); the range ends at {r.end}"
            )
            if fail_on_data_loss:
                raise DataLossError(message)
            break
    if pending:
        yield pending


def _handle_events(
    consumer: Consumer, r: OffsetRange, fetched: list[Message], position: int, fail_on_data_loss: bool
) -> int:
    """The position after the error events among fetched messages (end of partition, offset
    out of range); other errors are raised unless librdkafka retries them itself."""
    for msg in fetched:
        error = msg.error()
        if error is None:
            continue
        if error.code() == KafkaError._PARTITION_EOF:
            end = msg.offset()
            assert end is not None  # the offset the partition ended at
            position = max(position, end)
        elif error.code() == KafkaError._AUTO_OFFSET_RESET:
            position = _skip_lost(consumer, r, position, fail_on_data_loss)
        elif error.fatal() or (error.code() > 0 and not error.retriable()):
            raise RuntimeError(f"cannot read {r.topic}/{r.partition}: {error.str()}")
    return position


def _skip_lost(consumer: Consumer, r: OffsetRange, position: int, fail_on_data_loss: bool) -> int:
    """The offset to go on from when `position` is no longer in the log."""
    low, high = consumer.get_watermark_offsets(KafkaPartition(r.topic, r.partition), timeout=10)
    resume = low if position < low else r.end
    message = (
        f"records {position}..{min(resume, r.end) - 1} of {r.topic}/{r.partition} are no "
        f"longer in the log (log start {low}, end {high})"
    )
    if fail_on_data_loss:
        raise DataLossError(message + ". Set failOnDataLoss=false to skip them.")
    if resume < r.end:
        consumer.assign([KafkaPartition(r.topic, r.partition, resume)])
    return resume
