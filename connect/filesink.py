"""FileStreamSink's writing, as a Spark micro-batch handler: the values of a batch's records,
in offset order within each partition, appended to a file as lines.

Exactly once while nothing else writes the file: before a batch is appended, the file's
length is recorded with its batch id in the connector's checkpoint. Spark replays only the
last batch it did not record as committed, so a replay (after a crash) finds that record,
cuts the file back to the recorded length and appends the same lines again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from connect.converters import Converter
from connect.queryspec import QuerySpec

LEDGER = "file-sink.json"
MAX_RECORDS_PER_BATCH = "100000"  # a micro-batch is collected on the driver


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    """FileStreamSink's query: the topics' records through kctl's source into the file."""
    return subscribed(spark, spec).writeStream.foreachBatch(
        FileAppender(spec.config["file"], spec.converter("value"), spec.checkpoint)
    )


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
        .load()
    )


class FileAppender:
    """`foreachBatch(FileAppender(...))`: runs on the driver, where the file is."""

    def __init__(self, path: str, converter: Converter, checkpoint: Path) -> None:
        self.path = Path(path)
        self.converter = converter
        self.ledger = checkpoint / LEDGER

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        records = batch.select("topic", "partition", "offset", "value").collect()
        records.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
        text = "".join(self.converter.to_line(r["value"]) + "\n" for r in records)
        length = self._start_of(batch_id)
        with open(self.path, "ab") as handle:
            handle.truncate(length)
            handle.write(text.encode())
            handle.flush()
            os.fsync(handle.fileno())

    def _start_of(self, batch_id: int) -> int:
        """The file's length before this batch: recorded now, or by its first attempt."""
        try:
            recorded = json.loads(self.ledger.read_text())
            if recorded["batch"] == batch_id:
                return int(recorded["length"])
        except FileNotFoundError:
            pass
        length = self.path.stat().st_size if self.path.exists() else 0
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        partial = self.ledger.with_suffix(".tmp")
        with open(partial, "w") as handle:
            json.dump({"batch": batch_id, "length": length}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        partial.replace(self.ledger)
        return length
