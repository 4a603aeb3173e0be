"""Running one `kctl sql` query: topics as views, then a batch or streaming query whose
result goes to stdout or to a topic. The command-line side is kctl/sql/sql.py."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from typing import TypedDict

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from kctl.shell import console
from kctl.spark.output import BatchPrinter, print_rows
from kctl.spark.session import local_session
from kctl.spark.views import ViewSpec, client_options, register_views

SINK_COLUMNS = ("key", "value", "headers", "partition")
_PYTHON_ERROR = re.compile(r"^(?:\w+\.)*\w+(?:Error|Exception): (.+)$")


class SqlError(Exception):
    """The query is invalid (invalid=True) or failed while running."""

    def __init__(self, message: str, invalid: bool):
        super().__init__(message)
        self.invalid = invalid


class Once(TypedDict):
    once: bool


class AvailableNow(TypedDict):
    availableNow: bool


class ProcessingTime(TypedDict):
    processingTime: str


# DataStreamWriter.trigger's arguments: one of its keywords
Trigger = Once | AvailableNow | ProcessingTime


@dataclass(frozen=True)
class SqlJob:
    query: str
    views: ViewSpec
    topics: list[str]  # the topics to define as views
    trigger: Trigger | None  # None: a batch query
    to: str | None = None  # write to this topic instead of stdout
    checkpoint: str | None = None
    fmt: str = "text"


def run(job: SqlJob) -> None:
    spark = local_session("kctl sql")
    try:
        register_views(spark, job.views, job.topics)
        df = _analysed(spark, job.query)
        if job.trigger is None:
            _run_batch(df, job)
        else:
            _run_stream(df, job, job.trigger)
    except PySparkException as exc:
        raise SqlError(summary(exc), invalid=False) from None
    except (ValueError, ConnectionError) as exc:  # from planning, before any job ran
        raise SqlError(str(exc), invalid=isinstance(exc, ValueError)) from None
    finally:
        spark.stop()


def _analysed(spark: SparkSession, query: str) -> DataFrame:
    try:
        return spark.sql(query)
    except PySparkException as exc:
        raise SqlError(summary(exc), invalid=True) from None


def _run_batch(df: DataFrame, job: SqlJob) -> None:
    if job.to is None:
        print_rows(df.columns, [tuple(r) for r in df.collect()], job.fmt)
        return
    records = as_records(df).cache()
    count = records.count()
    (
        records.write.format("kctl")
        .options(**client_options(job.views.client))
        .option("topic", job.to)
        .mode("append")
        .save()
    )
    console.info(f"{count} records written to {job.to}.")


def _run_stream(df: DataFrame, job: SqlJob, trigger: Trigger) -> None:
    with tempfile.TemporaryDirectory(prefix="kctl-sql-") as scratch:
        checkpoint = job.checkpoint or scratch
        if job.to is not None:
            writer = (
                as_records(df)
                .writeStream.format("kctl")
                .options(**client_options(job.views.client))
                .option("topic", job.to)
            )
            # A Python sink takes append or complete mode (not update): finished rows only
            # when the query allows, else the whole result again every micro-batch.
            _wait(_start(writer, ("append", "complete"), checkpoint, trigger))
            return
        with BatchPrinter(job.fmt) as printer:
            # The whole result every micro-batch for aggregations, new rows otherwise.
            printing = df.writeStream.foreachBatch(printer)
            _wait(_start(printing, ("complete", "append"), checkpoint, trigger))


def _start(
    writer: DataStreamWriter, modes: tuple[str, str], checkpoint: str, trigger: Trigger
) -> StreamingQuery:
    """Start in the first output mode the query allows; Spark tells only when it starts."""
    first, second = modes
    try:
        return writer.outputMode(first).trigger(**trigger).option("checkpointLocation", checkpoint).start()
    except PySparkException as exc:
        if "output mode" not in str(exc).lower():
            raise SqlError(summary(exc), invalid=True) from None
    try:
        return writer.outputMode(second).trigger(**trigger).option("checkpointLocation", checkpoint).start()
    except PySparkException as exc:
        raise SqlError(summary(exc), invalid=True) from None


def _wait(query: StreamingQuery) -> None:
    """Until the query ends (once, available-now) or Ctrl-C stops it."""
    try:
        # pyspark annotates the timeout as int but takes any number of seconds (it sends ms)
        while not query.awaitTermination(0.5):  # type: ignore[arg-type]
            pass
    except KeyboardInterrupt:
        query.stop()
        raise
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    console.info(f"{rows} input records in {len(query.recentProgress)} micro-batches.")


def as_records(df: DataFrame) -> DataFrame:
    """The result as sink rows: its own value (and key, headers, partition) columns if it has
    them, else the whole row as a JSON value."""
    if "value" not in df.columns:
        return df.select(F.to_json(F.struct(*[F.col(c) for c in df.columns])).alias("value"))
    kept = [c for c in SINK_COLUMNS if c in df.columns]
    types = dict(df.dtypes)
    return df.select(
        *[
            F.col(c).cast("string").alias(c)
            if c in ("key", "value") and types[c] not in ("string", "binary")
            else F.col(c)
            for c in kept
        ]
    )


def summary(exc: Exception) -> str:
    """One line from a Spark error: the Python exception a worker raised, else the first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    raised = [m.group(1) for m in map(_PYTHON_ERROR.match, lines) if m]
    return raised[-1] if raised else (lines[0] if lines else type(exc).__name__)
