"""FileStreamSink's writing, as a Spark micro-batch handler: the values of a batch's records,
in offset order within each partition, appended to a file as lines.

Exactly once while nothing else writes the file: before a batch is appended, the file's
length is recorded with its batch id in the connector's checkpoint. Spark replays only the
last batch it did not record as committed, so a replay (after a crash) finds that record,
cuts the file back to the recorded length and appends the same lines again. A value the
converter cannot read goes to connect.deadletter, which fails the task or skips it (and puts
it in the dead letter queue) as the connector's errors.* settings say.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from connect import deadletter, ledger
from connect.converters import ConversionError
from connect.queryspec import QuerySpec

LEDGER = "file-sink.json"
MAX_RECORDS_PER_BATCH = "100000"  # a micro-batch is collected on the driver


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    """FileStreamSink's query: the topics' records through kctl's source into the file."""
    return subscribed(spark, spec).writeStream.foreachBatch(FileAppender(spec))


def subscribed(spark: SparkSession, spec: QuerySpec) -> DataFrame:
    """A sink connector's input: its `topics` or `topics.regex` from the earliest offsets,
    at most MAX_RECORDS_PER_BATCH records a micro-batch."""
    topics = spec.config.get("topics", "").strip()
    subscription = ("subscribe", topics) if topics else ("subscribePattern", spec.config["topics.regex"])
    return (
        spark.readStream.format("kctl")
        .options(**spec.kafka)
        .option(*subscription)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", MAX_RECORDS_PER_BATCH)
        .option("groupIdPrefix", f"connect-{spec.name}")
        .option("includeHeaders", "true")  # for the dead letter queue
        .load()
    )


class FileAppender:
    """`foreachBatch(FileAppender(spec))`: runs on the driver, where the file is."""

    def __init__(self, spec: QuerySpec) -> None:
        self.spec = spec
        self.path = Path(spec.config["file"])
        self.converter = spec.converter("value")
        self.ledger = spec.checkpoint / LEDGER

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        records = batch.select("topic", "partition", "offset", "key", "value", "headers").collect()
        records.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
        with deadletter.batch(self.spec, batch_id) as errors:
            lines = [line for line in (self._line(r, errors) for r in records) if line is not None]
            self._append("".join(line + "\n" for line in lines), batch_id)

    def _line(self, record: Row, errors: deadletter.BatchErrors) -> str | None:
        try:
            return self.converter.to_line(record["value"])
        except ConversionError as exc:
            headers = [(h["key"], h["value"]) for h in record["headers"] or []]
            errors.failed(
                deadletter.FailedRecord(
                    record["topic"],
                    record["partition"],
                    record["offset"],
                    record["key"],
                    record["value"],
                    headers,
                    "VALUE_CONVERTER",
                    self.converter.class_name,
                    exc,
                )
            )
            return None

    def _append(self, text: str, batch_id: int) -> None:
        length = self._start_of(batch_id)
        with open(self.path, "ab") as handle:
            handle.truncate(length)
            handle.write(text.encode())
            handle.flush()
            os.fsync(handle.fileno())

    def _start_of(self, batch_id: int) -> int:
        """The file's length before this batch: recorded now, or by its first attempt."""
        recorded = ledger.read(self.ledger)
        if recorded is not None and recorded["batch"] == batch_id:
            return int(recorded["length"])
        length = self.path.stat().st_size if self.path.exists() else 0
        ledger.write(self.ledger, {"batch": batch_id, "length": length})
        return length
