"""A JDBC source's reading of one table (or its custom query), as Confluent's
TimestampIncrementingTableQuerier does, but between two offsets: a micro-batch is the rows
after its start offset and up to and including its end offset, in (timestamp, incrementing)
order, so Spark replaying it after a crash reads the same rows (those not updated since).

Offsets are Confluent's: `{"incrementing": N}`, `{"timestamp": ms, "timestamp_nanos": n}`
or both; bulk mode, which reads the whole table each poll, counts its polls (`{"polls": N}`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    DateTime,
    MetaData,
    RowMapping,
    Select,
    Table,
    and_,
    column,
    desc,
    func,
    inspect,
    literal_column,
    or_,
    select,
    text,
)
from sqlalchemy.sql.selectable import FromClause

from connect.converters import Schema
from connect.jdbc import types
from connect.jdbc.progress import QUERY

BULK, INCREMENTING, TIMESTAMP, BOTH = "bulk", "incrementing", "timestamp", "timestamp+incrementing"
KCTL_TABLES = "__kctl_"  # kctl's own tables (the JDBC sink's ledger) are never read
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class NoIncrementingColumn(ValueError):
    """Incrementing mode on a table without a column to order by."""


@dataclass(frozen=True)
class Mode:
    kind: str
    incrementing: str  # "" = the table's autoincrement column
    timestamps: tuple[str, ...]  # coalesced, first non-null
    delay: timedelta  # timestamp.delay.interval.ms: rows younger than this wait

    @classmethod
    def of_config(cls, config: Mapping[str, str]) -> Mode:
        return cls(
            config.get("mode", "").strip(),
            config.get("incrementing.column.name", "").strip(),
            tuple(c.strip() for c in config.get("timestamp.column.name", "").split(",") if c.strip()),
            timedelta(milliseconds=int(config.get("timestamp.delay.interval.ms", "0"))),
        )

    @property
    def uses_timestamp(self) -> bool:
        return self.kind in (TIMESTAMP, BOTH)

    @property
    def uses_incrementing(self) -> bool:
        return self.kind in (INCREMENTING, BOTH)


@dataclass(frozen=True)
class Position:
    """Just after the row of this timestamp (UTC) and incrementing id; bulk mode's poll count."""

    timestamp: datetime | None = None
    incrementing: int | None = None
    polls: int | None = None

    def to_offset(self) -> dict[str, int]:
        found: dict[str, int] = {}
        if self.timestamp is not None:
            found["timestamp"] = (self.timestamp - EPOCH) // timedelta(milliseconds=1)
            found["timestamp_nanos"] = self.timestamp.microsecond * 1000
        if self.incrementing is not None:
            found["incrementing"] = self.incrementing
        if self.polls is not None:
            found["polls"] = self.polls
        return found

    @classmethod
    def from_offset(cls, offset: Mapping[str, int]) -> Position:
        moment = None
        if "timestamp" in offset:
            seconds = EPOCH + timedelta(seconds=int(offset["timestamp"]) // 1000)
            moment = seconds + timedelta(microseconds=int(offset.get("timestamp_nanos", 0)) // 1000)
        return cls(moment, offset.get("incrementing"), offset.get("polls"))

    @classmethod
    def initial(cls, mode: Mode) -> Position:
        if mode.kind == BULK:
            return cls(polls=0)
        return cls(EPOCH if mode.uses_timestamp else None, -1 if mode.uses_incrementing else None)


def table_names(connection: Connection, whitelist: Sequence[str], blacklist: Sequence[str]) -> list[str]:
    """The tables to read: the whitelist's, else every table but the blacklist's."""
    found = [t for t in inspect(connection).get_table_names() if not t.startswith(KCTL_TABLES)]
    if whitelist:
        return [t for t in found if t in whitelist]
    return [t for t in found if t not in blacklist]


class Querier:
    """One table's (or the query's) rows between offsets, on an open connection."""

    def __init__(self, connection: Connection, source: str, mode: Mode, query: str = "") -> None:
        self.connection = connection
        self.mode = mode
        self.source = source
        self.table: Table | None = None
        if query:
            self.rows_from: FromClause = _query_subquery(connection, query, mode)
        else:
            self.table = Table(source, MetaData(), autoload_with=connection)
            self.rows_from = self.table
        self.timestamp = self._timestamp()
        self.incrementing = self._incrementing()
        self.schema = None if self.table is None else types.struct_schema(source, self.table.columns)

    # -- offsets -------------------------------------------------------------------------
    def end(self, start: Position, now: datetime, cap: int) -> tuple[Position, bool]:
        """The end offset of the next micro-batch: the last of at most `cap` rows after
        `start` (older than the delay), and whether there were that many (more are waiting)."""
        if self.mode.kind == BULK:
            return Position(polls=(start.polls or 0) + 1), False
        order = self._order()
        keys = select(*order).where(self._after(start))
        if self.timestamp is not None:
            keys = keys.where(self.timestamp < self._bind(now - self.mode.delay))
        window = keys.order_by(*order).limit(cap).subquery()
        last = select(*window.c, func.count().over().label("rows"))
        found = self.connection.execute(last.order_by(*[desc(c) for c in window.c]).limit(1)).first()
        if found is None:
            return start, False
        return self._position(found[: len(order)]), found[-1] >= cap

    def rows_after(self, start: Position) -> int:
        """How many rows are after `start`: those not moved yet (bulk mode moves all each time)."""
        if self.mode.kind == BULK:
            return 0
        counted = select(func.count()).select_from(self.rows_from).where(self._after(start))
        return int(self.connection.execute(counted).scalar_one())

    def rows(self, start: Position, end: Position, fetch: int) -> Iterator[RowMapping]:
        """The rows after `start` up to `end` included, `fetch` at a time from the database."""
        query: Select[tuple[object, ...]] = select(self.rows_from)
        if self.mode.kind != BULK:
            query = query.where(self._after(start), self._upto(end)).order_by(*self._order())
        result = self.connection.execution_options(yield_per=fetch).execute(query)
        for row in result:
            yield row._mapping

    # -- schemas and keys ----------------------------------------------------------------
    def value_schema(self, row: RowMapping) -> Schema:
        """The row's struct schema: the table's columns, or a query's values' types."""
        if self.schema is not None:
            return self.schema
        fields = tuple((name, types.value_schema(value)) for name, value in row.items())
        return Schema("struct", False, None, fields)

    def key_schema(self) -> Schema | None:
        """The record key's schema: the primary key's one column, or a struct of several."""
        columns = list(self.table.primary_key.columns) if self.table is not None else []
        if not columns:
            return None
        if len(columns) == 1:
            one = types.column_schema(columns[0])
            return Schema(one.type, False, one.name)
        return Schema("struct", False, None, tuple((c.name, types.column_schema(c)) for c in columns))

    def key_columns(self) -> list[str]:
        return [c.name for c in self.table.primary_key.columns] if self.table is not None else []

    # -- helpers -------------------------------------------------------------------------
    def _timestamp(self) -> ColumnElement[datetime] | None:
        if not self.mode.uses_timestamp:
            return None
        columns = [self.rows_from.c[name] for name in self.mode.timestamps]
        return columns[0] if len(columns) == 1 else func.coalesce(*columns)

    def _incrementing(self) -> ColumnElement[int] | None:
        if not self.mode.uses_incrementing:
            return None
        if self.mode.incrementing:
            return self.rows_from.c[self.mode.incrementing]
        found = self.table.autoincrement_column if self.table is not None else None
        if found is None:
            raise NoIncrementingColumn(
                f"Cannot find a suitable incrementing column in {self.source}: set incrementing.column.name"
            )
        return found

    def _order(self) -> list[ColumnElement[Any]]:
        return [c for c in (self.timestamp, self.incrementing) if c is not None]

    def _after(self, start: Position) -> ColumnElement[bool]:
        ts, inc = self.timestamp, self.incrementing
        if ts is None:
            assert inc is not None
            return inc > start.incrementing
        if inc is None:
            return ts > self._bind(start.timestamp)
        at = self._bind(start.timestamp)
        return or_(ts > at, and_(ts == at, inc > start.incrementing))

    def _upto(self, end: Position) -> ColumnElement[bool]:
        ts, inc = self.timestamp, self.incrementing
        if ts is None:
            assert inc is not None
            return inc <= end.incrementing
        if inc is None:
            return ts <= self._bind(end.timestamp)
        at = self._bind(end.timestamp)
        return or_(ts < at, and_(ts == at, inc <= end.incrementing))

    def _bind(self, moment: datetime | None) -> datetime | None:
        """A UTC moment as the timestamp column compares it (naive for a column without zone)."""
        assert self.timestamp is not None and moment is not None
        zoned = isinstance(self.timestamp.type, DateTime) and self.timestamp.type.timezone
        return moment if zoned else moment.replace(tzinfo=None)

    def _position(self, values: Sequence[object]) -> Position:
        found = list(values)
        moment = found.pop(0) if self.timestamp is not None else None
        increment = found.pop(0) if self.incrementing is not None else None
        assert moment is None or isinstance(moment, datetime)
        utc = None if moment is None else types.utc(moment)
        return Position(utc, None if increment is None else int(str(increment)))


def _query_subquery(connection: Connection, query: str, mode: Mode) -> FromClause:
    """A custom query as a subquery to filter and order (Confluent appends its WHERE instead),
    its timestamp and incrementing columns typed so that SQLite's text reads as datetimes."""
    probe: Select[Any] = (
        select(literal_column("*")).select_from(text(query).columns().subquery("probe")).limit(0)
    )
    names = list(connection.execute(probe).keys())
    typed = {name: DateTime() for name in mode.timestamps} | {mode.incrementing: BigInteger()}
    return text(query).columns(*[column(name, typed.get(name)) for name in names]).subquery(QUERY)
