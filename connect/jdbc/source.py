"""JdbcSourceConnector as a Spark streaming source (`connect-jdbc`) into kctl's sink: each
micro-batch is, for every table (or the custom query), the rows between two of Confluent's
offsets (querier), each row a record of its topic (`topic.prefix` + table, or the prefix alone
for a query), keyed by the table's primary key, through the connector's converters.

The trigger is the worker's (1 s); the reader asks the database again only once
`poll.interval.ms` has passed since it last found every table read up to date.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming import DataStreamWriter
from pyspark.sql.streaming.datasource import ReadLimit
from sqlalchemy import Connection

from connect import sourcequery
from connect.converters import Converter
from connect.jdbc import urls
from connect.jdbc.querier import QUERY, Mode, Position, Querier, table_names
from connect.progress import committed_end
from connect.queryspec import QuerySpec

MAX_ROWS_PER_BATCH = 100_000  # per table; more waiting makes the next batch start at once


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    """JdbcSourceConnector's query; an unreachable database fails it now, with the reason."""
    urls.reachable(urls.of_config(spec.config))
    return sourcequery.stream(spark, spec, JdbcTablesSource)


def lag(spec: QuerySpec) -> int:
    """Rows not yet moved: in each table (or the query), those after its committed offset."""
    settings = SourceSettings(spec.config, spec.converter("key"), spec.converter("value"))
    end = committed_end(spec.checkpoint) or {}
    committed = {source: dict(offset) for source, offset in end.items() if isinstance(offset, dict)}
    return JdbcReader(settings).rows_behind(committed)


@dataclass(frozen=True)
class SourceSettings:
    config: Mapping[str, str]
    key: Converter
    value: Converter

    @property
    def mode(self) -> Mode:
        return Mode.of_config(self.config)

    @property
    def query(self) -> str:
        return self.config.get("query", "").strip()

    def topic(self, source: str) -> str:
        prefix = self.config.get("topic.prefix", "").strip()
        return prefix if self.query else prefix + source

    def connect(self) -> Connection:
        return urls.engine(urls.of_config(self.config)).connect()


@dataclass(frozen=True)
class TableRange(InputPartition):
    source: str  # a table, or QUERY
    start: dict[str, int]
    end: dict[str, int]


class JdbcTablesSource(DataSource):
    """`spark.readStream.format("connect-jdbc")` with option `settings` (the connector's config
    and converters, as JSON): rows of a topic, a key and a value."""

    @classmethod
    def name(cls) -> str:
        return "connect-jdbc"

    def schema(self) -> str:
        return sourcequery.SCHEMA

    def streamReader(self, schema: object) -> DataSourceStreamReader:
        return JdbcReader(SourceSettings(*sourcequery.settings(self.options)))


class JdbcReader(DataSourceStreamReader):
    def __init__(self, settings: SourceSettings) -> None:
        self.settings = settings
        self.poll_s = int(settings.config.get("poll.interval.ms", "5000")) / 1000
        self.next_poll = 0.0  # time.monotonic() of the next look at the database

    def initialOffset(self) -> dict[str, dict[str, int]]:
        with self.settings.connect() as connection:
            initial = Position.initial(self.settings.mode).to_offset()
            return {source: initial for source in self._sources(connection)}

    def latestOffset(self, start: dict[str, dict[str, int]], limit: ReadLimit) -> dict[str, dict[str, int]]:
        if time.monotonic() < self.next_poll:
            return start
        ends, waiting = dict(start), False
        now = datetime.now(UTC)
        with self.settings.connect() as connection:
            for source in self._sources(connection):
                querier = self._querier(connection, source)
                end, more = querier.end(self._start(start, source), now, MAX_ROWS_PER_BATCH)
                ends[source], waiting = end.to_offset(), waiting or more
        self.next_poll = 0.0 if waiting else time.monotonic() + self.poll_s
        return ends

    def partitions(
        self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
    ) -> list[TableRange]:
        initial = Position.initial(self.settings.mode).to_offset()
        return [
            TableRange(source, start.get(source, initial), offset)
            for source, offset in end.items()
            if offset != start.get(source, initial)
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple[str, bytes | None, bytes]]:
        assert isinstance(partition, TableRange)
        settings = self.settings
        fetch = int(settings.config.get("batch.max.rows", "100"))
        topic = settings.topic(partition.source)
        with settings.connect() as connection:
            querier = self._querier(connection, partition.source)
            key_schema, key_columns = querier.key_schema(), querier.key_columns()
            start, end = Position.from_offset(partition.start), Position.from_offset(partition.end)
            for row in querier.rows(start, end, fetch):
                key = None
                if key_schema is not None:
                    value = row[key_columns[0]] if len(key_columns) == 1 else {c: row[c] for c in key_columns}
                    key = settings.key.from_data(key_schema, value)
                yield topic, key, settings.value.from_data(querier.value_schema(row), row)

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        """Spark's checkpoint is the record of progress; nothing to release."""

    def rows_behind(self, committed: Mapping[str, dict[str, int]]) -> int:
        """The rows after the `committed` offsets, in every table read (the connector's lag)."""
        with self.settings.connect() as connection:
            return sum(
                self._querier(connection, source).rows_after(self._start(committed, source))
                for source in self._sources(connection)
            )

    def _sources(self, connection: Connection) -> list[str]:
        if self.settings.query:
            return [QUERY]
        config = self.settings.config
        return table_names(connection, _names(config, "table.whitelist"), _names(config, "table.blacklist"))

    def _querier(self, connection: Connection, source: str) -> Querier:
        return Querier(connection, source, self.settings.mode, self.settings.query)

    def _start(self, offsets: Mapping[str, dict[str, int]], source: str) -> Position:
        found = offsets.get(source)
        return Position.initial(self.settings.mode) if found is None else Position.from_offset(found)


def _names(config: Mapping[str, str], key: str) -> list[str]:
    return [name.strip() for name in config.get(key, "").split(",") if name.strip()]
