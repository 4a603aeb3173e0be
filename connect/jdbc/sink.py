"""JdbcSinkConnector's query: the topics' records through kctl's source, each micro-batch
written into the database by the writer in one transaction (on the driver). A record the
writer cannot take goes to Connect's error handling (connect.deadletter), which fails the
task or reports and skips it; the batch's dead letters go out before its transaction commits,
so a batch replayed after a crash either finds its rows and letters both written or writes
them again, the queue's ledger keeping each letter once."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from connect import deadletter
from connect.filesink import subscribed
from connect.jdbc import urls
from connect.jdbc.writer import JdbcWriter, Record, Rejection, SinkSettings
from connect.queryspec import QuerySpec


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    """An unreachable database fails the connector now, with the reason."""
    engine = urls.reachable(urls.of_config(spec.config))
    settings = SinkSettings.of_config(spec.name, spec.config)
    writer = JdbcWriter(settings, spec.converter("key"), spec.converter("value"), engine)
    return subscribed(spark, spec).writeStream.foreachBatch(BatchWriter(spec, writer))


class BatchWriter:
    """`foreachBatch(BatchWriter(...))`: a micro-batch's records into the writer."""

    def __init__(self, spec: QuerySpec, writer: JdbcWriter) -> None:
        self.spec = spec
        self.writer = writer

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("topic", "partition", "offset", "key", "value", "headers").collect()
        records = [
            Record(
                r["topic"],
                r["partition"],
                r["offset"],
                _bytes(r["key"]),
                _bytes(r["value"]),
                tuple((h["key"], _bytes(h["value"])) for h in r["headers"] or []),
            )
            for r in rows
        ]
        with self.writer.transaction() as connection, deadletter.batch(self.spec, batch_id) as errors:
            self.writer.write(connection, records, lambda rejection: errors.failed(failed_record(rejection)))


def failed_record(rejection: Rejection) -> deadletter.FailedRecord:
    """The writer's rejection as Connect's error handler takes it."""
    record = rejection.record
    return deadletter.FailedRecord(
        record.topic,
        record.partition,
        record.offset,
        record.key,
        record.value,
        list(record.headers),
        rejection.stage,
        rejection.class_name,
        rejection.error,
    )


def _bytes(data: bytearray | bytes | None) -> bytes | None:
    return None if data is None else bytes(data)
