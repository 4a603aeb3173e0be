"""JdbcSinkConnector's query: the topics' records through kctl's source, each micro-batch
written into the database by the writer in one transaction (on the driver)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from connect.filesink import subscribed
from connect.jdbc import urls
from connect.jdbc.writer import JdbcWriter, Record, SinkSettings
from connect.queryspec import QuerySpec


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    """An unreachable database fails the connector now, with the reason."""
    engine = urls.reachable(urls.of_config(spec.config))
    settings = SinkSettings.of_config(spec.name, spec.config)
    writer = JdbcWriter(settings, spec.converter("key"), spec.converter("value"), engine)
    return subscribed(spark, spec).writeStream.foreachBatch(BatchWriter(writer))


class BatchWriter:
    """`foreachBatch(BatchWriter(...))`: a micro-batch's records into the writer."""

    def __init__(self, writer: JdbcWriter) -> None:
        self.writer = writer

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("topic", "partition", "offset", "key", "value").collect()
        self.writer.write(
            [
                Record(r["topic"], r["partition"], r["offset"], _bytes(r["key"]), _bytes(r["value"]))
                for r in rows
            ]
        )


def _bytes(data: bytearray | bytes | None) -> bytes | None:
    return None if data is None else bytes(data)
