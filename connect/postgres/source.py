"""PostgresConnector as a Spark streaming source (`connect-postgres`) into kctl's sink. The
offset is the slot's LSN: a micro-batch is every transaction that committed after its start
LSN and up to its end LSN (the last commit the reader found when it planned the batch),
peeked again the same when Spark replays it; once Spark commits a batch the slot is advanced
to its end, so the slot keeps only what is not yet committed. With `snapshot.mode=initial`
the first batch is instead the captured tables' rows (op `r`), read at the slot's first LSN.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming import DataStreamWriter
from pyspark.sql.streaming.datasource import ReadLimit
from sqlalchemy import Engine, text

from connect import sourcequery
from connect.converters import Converter, Data
from connect.jdbc import urls
from connect.postgres import config as options
from connect.postgres import slot
from connect.postgres.envelope import Origin, Record, records, snapshot_marks
from connect.progress import committed_end
from connect.queryspec import QuerySpec

MAX_CHANGES_PER_BATCH = 100_000  # a batch ends at the first commit past this many changes
Offset = dict[str, object]  # {"lsn": N, "tables": ["schema.table", ...]}, "snapshot": true until it is read


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    """PostgresConnector's query; an unreachable database fails it now, with the reason."""
    urls.reachable(slot.url(spec.config))
    return sourcequery.stream(spark, spec, PostgresChangesSource)


def lag(spec: QuerySpec) -> int:
    """Changes not yet moved: the captured tables' changes committed after the committed LSN
    (before the first batch is committed: all the slot holds)."""
    settings = Settings(spec.config, spec.converter("key"), spec.converter("value"))
    end = committed_end(spec.checkpoint)
    with settings.database.connect() as connection:
        found = slot.peek(connection, settings.slot, _lsn(end) if end else 0, slot.current_lsn(connection))
    return sum(settings.captured(c.schema, c.table) for t in found for c in t.changes)


@dataclass(frozen=True)
class Settings:
    config: Mapping[str, str]
    key: Converter
    value: Converter

    @property
    def slot(self) -> str:
        return self.config.get("slot.name", "debezium").strip()

    @property
    def database(self) -> Engine:
        return slot.engine(self.config)

    def origin(self, xid: int | None, ts_ms: int, snapshot: str = "false") -> Origin:
        prefix, db = self.config["topic.prefix"].strip(), self.config["database.dbname"].strip()
        return Origin(prefix, db, xid, ts_ms, snapshot)

    def captured(self, schema: str, table: str) -> bool:
        return options.captured(self.config, schema, table)

    def encoded(self, record: Record) -> tuple[str, bytes | None, bytes | None]:
        return record.topic, _bytes(self.key, record.key), _bytes(self.value, record.value)


@dataclass(frozen=True)
class LsnRange(InputPartition):
    start: int
    end: int
    snapshot: bool  # the tables' rows at `start`, not the changes


class PostgresChangesSource(DataSource):
    """`spark.readStream.format("connect-postgres")` with option `settings` (the connector's
    config and converters, as JSON): records of a topic, a key and a value (null: a tombstone)."""

    @classmethod
    def name(cls) -> str:
        return "connect-postgres"

    def schema(self) -> str:
        return sourcequery.SCHEMA

    def streamReader(self, schema: object) -> DataSourceStreamReader:
        return PostgresReader(Settings(*sourcequery.settings(self.options)))


class PostgresReader(DataSourceStreamReader):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def initialOffset(self) -> Offset:
        """The slot's position, the slot created first: changes after it are kept for us."""
        offset: Offset = {"lsn": slot.ensure(self.settings.database, self.settings.slot), "tables": []}
        if self.settings.config.get("snapshot.mode", "initial").strip() == "initial":
            offset["snapshot"] = True
        return offset

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        tables = set(_tables(start))
        with self.settings.database.connect() as connection:
            if start.get("snapshot"):
                tables |= {f"{s}.{t}" for s, t in slot.captured_tables(connection, self.settings.config)}
                return {"lsn": start["lsn"], "tables": sorted(tables)}
            latest = slot.current_lsn(connection)
            found = slot.peek(connection, self.settings.slot, _lsn(start), latest, MAX_CHANGES_PER_BATCH)
        if not found:
            return start
        changed = {
            f"{c.schema}.{c.table}"
            for t in found
            for c in t.changes
            if self.settings.captured(c.schema, c.table)
        }
        return {"lsn": found[-1].commit_lsn, "tables": sorted(tables | changed)}

    def partitions(self, start: Offset, end: Offset) -> list[LsnRange]:
        """One partition a batch: the topic gets its changes in commit order."""
        if start == end:
            return []
        return [LsnRange(_lsn(start), _lsn(end), bool(start.get("snapshot")))]

    def read(self, partition: InputPartition) -> Iterator[tuple[str, bytes | None, bytes | None]]:
        assert isinstance(partition, LsnRange)
        for record in self._snapshot(partition.start) if partition.snapshot else self._changes(partition):
            yield self.settings.encoded(record)

    def commit(self, end: Offset) -> None:
        """Spark has committed every batch up to `end`: the slot may drop those changes."""
        if not end.get("snapshot"):
            with self.settings.database.connect() as connection:
                slot.advance(connection, self.settings.slot, _lsn(end))

    def _changes(self, partition: LsnRange) -> Iterator[Record]:
        settings, tombstones, now = self.settings, options.tombstones(self.settings.config), _now_ms()
        with settings.database.connect() as connection:
            found = slot.peek(connection, settings.slot, partition.start, partition.end)
        for transaction in found:
            origin = settings.origin(transaction.xid, transaction.ts_ms)
            for change in transaction.changes:
                if settings.captured(change.schema, change.table):
                    yield from records(change, origin, tombstones, now)

    def _snapshot(self, lsn: int) -> Iterator[Record]:
        settings, tombstones, now = self.settings, options.tombstones(self.settings.config), _now_ms()
        with settings.database.connect().execution_options(isolation_level="REPEATABLE READ") as connection:
            xid = int(connection.execute(text("SELECT txid_current()")).scalar_one())
            for change, mark in snapshot_marks(slot.snapshot(connection, settings.config, lsn)):
                yield from records(change, settings.origin(xid, now, mark), tombstones, now)


def _bytes(converter: Converter, data: Data | None) -> bytes | None:
    if data is None or data.schema is None:
        return None
    return converter.from_data(data.schema, data.value)


def _lsn(offset: Offset) -> int:
    found = offset["lsn"]
    assert isinstance(found, int)
    return found


def _tables(offset: Offset) -> list[str]:
    found = offset.get("tables") or []
    assert isinstance(found, list)
    return [str(name) for name in found]


def _now_ms() -> int:
    return int(time.time() * 1000)
