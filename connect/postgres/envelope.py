"""Row changes as Debezium's records: topic `<topic.prefix>.<schema>.<table>`, the primary key
as a struct (`<prefix>.<schema>.<table>.Key`), the value Debezium's envelope
(`...Envelope`: `before`, `after`, `source`, `op`, `ts_ms`), and after a delete a tombstone.
Each side is a Connect schema and value, so the connector's converters write it plain or with
its schema."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from connect.converters import Data, Schema
from connect.postgres import columns
from connect.postgres.wal2json import Change, Column

DEBEZIUM_VERSION = "2.7.3.Final"  # the Debezium release whose envelope these records follow
SOURCE_SCHEMA = Schema(
    "struct",
    False,
    "io.debezium.connector.postgresql.Source",
    (
        ("version", Schema("string")),
        ("connector", Schema("string")),
        ("name", Schema("string")),
        ("ts_ms", Schema("int64")),
        ("snapshot", Schema("string", True)),
        ("db", Schema("string")),
        ("schema", Schema("string")),
        ("table", Schema("string")),
        ("txId", Schema("int64", True)),
        ("lsn", Schema("int64", True)),
    ),
)


@dataclass(frozen=True)
class Record:
    topic: str
    key: Data | None  # None for a table without a primary key
    value: Data | None  # None: a tombstone


@dataclass(frozen=True)
class Origin:
    """Where a change happened, as its `source` tells it."""

    prefix: str  # topic.prefix, the source's `name`
    db: str
    xid: int | None
    ts_ms: int  # the commit time (a snapshot's: when it was read)
    snapshot: str = "false"  # Debezium's SnapshotRecord: first, true, last, false


def records(change: Change, origin: Origin, tombstones: bool, now_ms: int) -> list[Record]:
    """The records of one change: an update that changes the key is a delete (and its
    tombstone) under the old key, then a create under the new one, as Debezium sends it."""
    if (
        change.op == "u"
        and change.identity
        and _key_values(change, change.identity) != _key_values(change, change.row)
    ):
        deleted = Change("d", change.schema, change.table, change.lsn, (), change.identity, change.key)
        created = Change("c", change.schema, change.table, change.lsn, change.row, (), change.key)
        return records(deleted, origin, tombstones, now_ms) + records(created, origin, tombstones, now_ms)
    topic = f"{origin.prefix}.{change.schema}.{change.table}"
    key_columns = _key(change.key, change.identity if change.op == "d" else change.row)
    key = _struct(f"{topic}.Key", key_columns, optional=False) if key_columns else None
    before = _struct(f"{topic}.Value", change.identity) if change.identity else None
    after = _struct(f"{topic}.Value", change.row) if change.row else None
    value = _envelope(topic, before, after, _source(change, origin), change.op, now_ms)
    found = [Record(topic, key, value)]
    if change.op == "d" and tombstones:
        found.append(Record(topic, key, None))
    return found


def snapshot_marks(changes: Iterable[Change]) -> Iterator[tuple[Change, str]]:
    """A snapshot's reads with Debezium's `snapshot` marks: first, true ..., last."""
    previous: Change | None = None
    mark = "first"
    for change in changes:
        if previous is not None:
            yield previous, mark
            mark = "true"
        previous = change
    if previous is not None:
        yield previous, "last"


def _key(names: tuple[str, ...], row: tuple[Column, ...]) -> tuple[Column, ...]:
    return tuple(column for column in row if column.name in names)


def _key_values(change: Change, row: tuple[Column, ...]) -> dict[str, object]:
    return {c.name: columns.value(c) for c in _key(change.key, row)}


def _struct(name: str, row: tuple[Column, ...], optional: bool = True) -> Data:
    schema = Schema("struct", optional, name, tuple((c.name, columns.schema(c)) for c in row))
    return Data(schema, {c.name: columns.value(c) for c in row})


def _source(change: Change, origin: Origin) -> Data:
    value = {
        "version": DEBEZIUM_VERSION,
        "connector": "postgresql",
        "name": origin.prefix,
        "ts_ms": origin.ts_ms,
        "snapshot": origin.snapshot,
        "db": origin.db,
        "schema": change.schema,
        "table": change.table,
        "txId": origin.xid,
        "lsn": change.lsn,
    }
    return Data(SOURCE_SCHEMA, value)


def _envelope(
    topic: str, before: Data | None, after: Data | None, source: Data, op: str, now_ms: int
) -> Data:
    row_schema = (after or before or Data(Schema("struct", True, f"{topic}.Value"), None)).schema
    assert row_schema is not None
    schema = Schema(
        "struct",
        False,
        f"{topic}.Envelope",
        (
            ("before", before.schema if before and before.schema else row_schema),
            ("after", after.schema if after and after.schema else row_schema),
            ("source", SOURCE_SCHEMA),
            ("op", Schema("string")),
            ("ts_ms", Schema("int64", True)),
        ),
    )
    value = {
        "before": before.value if before else None,
        "after": after.value if after else None,
        "source": source.value,
        "op": op,
        "ts_ms": now_ms,
    }
    return Data(schema, value)
