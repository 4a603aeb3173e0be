"""Rows to records: the sink's columns (Spark's Kafka sink contract) and a checked producer.

Columns: `value` (string or binary, required), `key` (string or binary), `topic` (string;
the `topic` option overrides it), `partition` (int; null lets the partitioner choose) and
`headers` (array<struct<key: string, value: binary>>). Other columns are ignored. With
key.format or value.format that side may be of any type: kctl.spark.encoding encodes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from confluent_kafka import KafkaError, Message, Producer
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType

from kctl.spark.schema import HEADERS_TYPE

Headers = list[tuple[str, bytes | None]]
# topic, partition (None: the partitioner's choice), key, value, headers
Row = tuple[str, int | None, bytes | str | None, bytes | str | None, Headers]

_TEXT_OR_BYTES = (StringType(), BinaryType())
FLUSH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class SinkColumns:
    topic: str | None  # the topic option, which wins over a topic column
    key: bool
    partition: bool
    headers: bool


def sink_columns(
    schema: StructType, topic_option: str | None, encoded: frozenset[str] = frozenset()
) -> SinkColumns:
    """Check the columns against the contract before any task runs; the `encoded` sides
    ("key", "value") become binary before rows are made of them."""
    types = {f.name: f.dataType for f in schema.fields if f.name not in encoded}
    expected = {
        "value": _TEXT_OR_BYTES,
        "key": _TEXT_OR_BYTES,
        "topic": (StringType(),),
        "partition": (IntegerType(),),
        "headers": (HEADERS_TYPE,),
    }
    if "value" not in types and "value" not in encoded:
        raise ValueError("the kctl sink needs a value column (string or binary)")
    if topic_option is None and "topic" not in types:
        raise ValueError("the kctl sink needs a topic: set the topic option or add a topic column")
    for name, allowed in expected.items():
        # simpleString ignores nullability, which the contract does not care about.
        if name in types and types[name].simpleString() not in {t.simpleString() for t in allowed}:
            raise ValueError(
                f"column {name} has type {types[name].simpleString()}; the kctl sink "
                f"takes {' or '.join(t.simpleString() for t in allowed)}"
            )
    names = {f.name for f in schema.fields}
    return SinkColumns(topic_option, "key" in names, "partition" in names, "headers" in names)


def rows(batch: pa.RecordBatch, columns: SinkColumns) -> Iterator[Row]:
    """The records of one Arrow batch, each column converted to Python in one call."""
    count = batch.num_rows

    def column(name: str, present: bool) -> list:
        return batch.column(name).to_pylist() if present else [None] * count

    topics = [columns.topic] * count if columns.topic else column("topic", True)
    headers = [
        [(h["key"], h["value"]) for h in hs] if hs else [] for hs in column("headers", columns.headers)
    ]
    for row in zip(
        topics,
        column("partition", columns.partition),
        column("key", columns.key),
        column("value", True),
        headers,
    ):
        if row[0] is None:
            raise ValueError("a row has a null topic; set the topic option for a default topic")
        yield row


_cached: tuple[tuple, Producer] | None = None


def _idempotent_producer(config: dict[str, str | bool]) -> Producer:
    """The process's idempotent producer for this configuration. A Python worker runs task
    after task, and a new idempotent producer spends ~0.5 s getting its producer id before
    its first delivery: per task and micro-batch, that would dominate small batches. One is
    kept, the last configuration used, so a client of a cluster no longer in use does not
    linger."""
    global _cached
    key = tuple(sorted(config.items()))
    if _cached is None or _cached[0] != key:
        _forget_producer()
        _cached = (key, Producer(config))
    return _cached[1]


def _forget_producer() -> None:
    global _cached
    if _cached is not None:
        _cached[1].flush(FLUSH_TIMEOUT_S)
        _cached = None


class Outbox:
    """Sends records and, on leaving the `with` block, waits for all of them: any failed
    delivery is raised. When the block fails, queued records are dropped and those already
    sent are waited for, so nothing of a failed task lands later, unseen by its retry."""

    def __init__(self, client: dict[str, str], idempotent: bool = True):
        """idempotent=False: a short-lived plain producer whatever `client` says (for a few
        records whose duplicates are harmless), else the cached one, client settings last."""
        self._idempotent = idempotent
        if idempotent:
            self._producer = _idempotent_producer({"acks": "all", "enable.idempotence": True, **client})
        else:
            self._producer = Producer({**client, "acks": "all", "enable.idempotence": False})
        self._error: str | None = None
        self._sent = 0
        self.delivered = 0

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, kind, *_exc) -> None:
        if kind is not None:
            self._producer.purge(in_queue=True, in_flight=False)
            self._producer.flush(FLUSH_TIMEOUT_S)
            if self._idempotent:
                _forget_producer()  # its state after a failure is not worth trusting
            return
        left = self._producer.flush(FLUSH_TIMEOUT_S)
        if self._error is not None:
            raise RuntimeError(f"cannot deliver records to {self._error}")
        if left:
            raise TimeoutError(f"{left} records not delivered within {FLUSH_TIMEOUT_S:g}s")

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.delivered += 1
        elif self._error is None:
            partition = message.partition()  # None: the record never got one
            where = "" if partition is None or partition < 0 else f"/{partition}"
            self._error = f"{message.topic()}{where}: {error.str()}"

    def send(
        self, topic: str, partition: int | None, key, value, headers: Headers, timestamp: int = 0
    ) -> None:
        """`timestamp`: the record's CreateTime in ms; 0 lets the producer take the time of now."""
        partition = -1 if partition is None else partition  # -1: the partitioner's choice
        while True:
            try:
                self._producer.produce(
                    topic,
                    value,
                    key,
                    partition,
                    timestamp=timestamp,
                    on_delivery=self._on_delivery,
                    # confluent-kafka types headers as a list of (str, str | bytes | None): a
                    # list of (str, bytes | None) is not one to mypy, lists being invariant
                    headers=headers or None,  # type: ignore[arg-type]
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.05)
        self._sent += 1
        if not self._sent % 1024:
            self._producer.poll(0)
