"""The `kctl` data source: Spark's Kafka connector contract, in Python, on librdkafka."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kctl.spark.options import sink_options, source_options, wants_headers
from kctl.spark.produce import sink_columns
from kctl.spark.reader import KctlBatchReader, KctlStreamReader
from kctl.spark.schema import source_schema
from kctl.spark.writer import KctlBatchWriter, KctlStreamWriter


class KctlDataSource(DataSource):
    """`spark.read.format("kctl")`, `readStream`, `write` and `writeStream`, with the options,
    row schema and sink columns of Spark's `kafka` format."""

    @classmethod
    def name(cls) -> str:
        return "kctl"

    def schema(self) -> StructType:
        return source_schema(wants_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        return KctlBatchReader(source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        return KctlStreamReader(source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ValueError("the kctl sink only appends to topics: use mode append (or error)")
        options = sink_options(self.options, exactly_once=False)
        return KctlBatchWriter(options, sink_columns(schema, options.topic))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        # overwrite means Complete output mode: every row of the result is appended again,
        # as with Spark's Kafka sink; a topic cannot be truncated.
        options = sink_options(self.options, exactly_once=True)
        return KctlStreamWriter(options, sink_columns(schema, options.topic))

    def _check_schema(self, schema: StructType) -> None:
        expected = self.schema()
        if schema.simpleString() != expected.simpleString():
            raise ValueError(
                "the kctl source has a fixed schema and cannot be set with a custom "
                f"one: {expected.simpleString()}"
            )
