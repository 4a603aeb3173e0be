"""The `kctl` data source: Spark's Kafka connector contract, in Python, on librdkafka.

With key.format or value.format the registry is asked for the schemas when the query is
defined: by `schema()` for reads (Spark then pickles this instance for the reader, which
decodes with the very schemas the columns were typed from) and by the writers for writes.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kctl.spark.decoding import SourceDecoding, plan_decoding
from kctl.spark.encoding import SinkEncoding, plan_encoding
from kctl.spark.formats import registry_formats
from kctl.spark.options import SinkOptions, lowered, sink_options, source_options, subscription, wants_headers
from kctl.spark.produce import SinkColumns, sink_columns
from kctl.spark.reader import KctlBatchReader, KctlStreamReader
from kctl.spark.schema import source_schema
from kctl.spark.writer import KctlBatchWriter, KctlStreamWriter


class KctlDataSource(DataSource):
    """`spark.read.format("kctl")`, `readStream`, `write` and `writeStream`, with the options,
    row schema and sink columns of Spark's `kafka` format."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self._decoding: SourceDecoding | None = None
        self._planned = False

    @classmethod
    def name(cls) -> str:
        return "kctl"

    def schema(self) -> StructType:
        decoding = self._planned_decoding()
        headers = wants_headers(self.options)
        return source_schema(headers) if decoding is None else decoding.schema(headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        return KctlBatchReader(source_options(self.options, streaming=False), self._planned_decoding())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        return KctlStreamReader(source_options(self.options, streaming=True), self._planned_decoding())

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ValueError("the kctl sink only appends to topics: use mode append (or error)")
        options = sink_options(self.options, exactly_once=False)
        return KctlBatchWriter(options, *self._sink(options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        # overwrite means Complete output mode: every row of the result is appended again,
        # as with Spark's Kafka sink; a topic cannot be truncated.
        options = sink_options(self.options, exactly_once=True)
        return KctlStreamWriter(options, *self._sink(options, schema))

    def _planned_decoding(self) -> SourceDecoding | None:
        """The reader schemas of key.format/value.format, asked of the registry once."""
        if not self._planned:
            formats = registry_formats(lowered(self.options))
            self._decoding = None if formats is None else plan_decoding(formats, subscription(self.options))
            self._planned = True
        return self._decoding

    @staticmethod
    def _sink(options: SinkOptions, schema: StructType) -> tuple[SinkColumns, SinkEncoding | None]:
        formats = options.formats
        if formats is None:
            return sink_columns(schema, options.topic), None
        columns = sink_columns(schema, options.topic, frozenset(side.side for side in formats.sides))
        return columns, plan_encoding(formats, options.topic, schema)

    def _check_schema(self, schema: StructType) -> None:
        expected = self.schema()
        if schema.simpleString() != expected.simpleString():
            raise ValueError(
                "the kctl source has a fixed schema and cannot be set with a custom "
                f"one: {expected.simpleString()}"
            )
