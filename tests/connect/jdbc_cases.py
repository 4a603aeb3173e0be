"""The JDBC connectors' checks against a real database, shared by SQLite (unit tier) and
PostgreSQL (cluster tier, a server process): the sink writes a batch in one transaction,
exactly once across a replay, and names a record that does not fit; the source reads a
table's rows between offsets, the same rows when a range is read again."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Column, DateTime, Engine, Integer, MetaData, Table, Text, insert, select, update

from connect.converters import TIMESTAMP, Converter, Schema
from connect.jdbc.querier import Mode, Position, Querier
from connect.jdbc.writer import (
    SINK_TASK,
    JdbcWriter,
    Record,
    RecordFailed,
    Rejected,
    Rejection,
    SinkSettings,
    fail,
)

JSON = Converter()
KEY = Schema("int32")
VALUE = Schema(
    "struct",
    name="items",
    fields=(
        ("id", Schema("int32")),
        ("name", Schema("string", True)),
        ("at", Schema("int64", True, TIMESTAMP)),
    ),
)
AT = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)


def record(
    offset: int, key: int, name: str | None = "x", tombstone: bool = False, topic: str = "items"
) -> Record:
    value = None if tombstone else JSON.from_data(VALUE, {"id": key, "name": name, "at": AT})
    return Record(topic, 0, offset, JSON.from_data(KEY, key), value)


def write(writer: JdbcWriter, records: list[Record], rejected: Rejected = fail) -> None:
    """A batch in its own transaction, as the sink writes one."""
    with writer.transaction() as connection:
        writer.write(connection, records, rejected)


def rows(engine: Engine, table: str) -> list[tuple[object, ...]]:
    reflected = Table(table, MetaData(), autoload_with=engine)
    with engine.connect() as connection:
        return [
            tuple(r) for r in connection.execute(select(reflected).order_by(*reflected.primary_key.columns))
        ]


def upserts_deletes_and_replays(engine: Engine) -> None:
    settings = SinkSettings(
        "copy", "upsert", "record_key", ("id",), auto_create=True, delete_enabled=True, batch_size=2
    )
    writer = JdbcWriter(settings, JSON, JSON, engine)
    write(writer, [record(0, 1, "a"), record(1, 2, "b"), record(2, 1, "a2"), record(3, 3, "c")])
    write(writer, [record(4, 3, tombstone=True), record(5, 2, "b2")])
    write(writer, [record(4, 3, tombstone=True), record(5, 2, "replayed"), record(6, 4, "d")])  # a replay
    moment = AT.replace(tzinfo=None)
    assert rows(engine, "items") == [(1, "a2", moment), (2, "b2", moment), (4, "d", moment)]


def inserts_once_with_kafka_coordinates(engine: Engine) -> None:
    settings = SinkSettings("log", "insert", "kafka", auto_create=True, table_format="log_${topic}")
    writer = JdbcWriter(settings, JSON, JSON, engine)
    write(writer, [record(0, 1), record(1, 1)])
    write(writer, [record(1, 1), record(2, 5)])  # offset 1 again: a replayed batch
    found = rows(engine, "log_items")
    assert [(r[0], r[3], r[4], r[5]) for r in found] == [
        (1, "items", 0, 0),
        (1, "items", 0, 1),
        (5, "items", 0, 2),
    ]


def a_record_that_does_not_fit_fails_naming_it(engine: Engine) -> None:
    table = Table(
        "strict", MetaData(), Column("id", Integer, primary_key=True), Column("name", Text, nullable=False)
    )
    table.create(engine)
    writer = JdbcWriter(
        SinkSettings(
            "strict", "insert", "record_key", ("id",), table_format="strict", fields_whitelist=("name",)
        ),
        JSON,
        JSON,
        engine,
    )
    with pytest.raises(
        RecordFailed, match=r"topic=items partition=0 offset=7 key=.*non-null column\(s\) name"
    ):
        write(writer, [record(6, 1, "fine"), record(7, 2, None)])
    write(writer, [record(8, 1, "first")])
    with pytest.raises(RecordFailed, match=r"offset=9 key=.*\"payload\":1\}: .*(UNIQUE|duplicate key)"):
        write(writer, [record(9, 1, "again")])
    wrong = Schema("struct", fields=(("id", Schema("int32")), ("name", Schema("int32"))))
    bad = Record("items", 0, 10, JSON.from_data(KEY, 3), JSON.from_data(wrong, {"id": 3, "name": 5}))
    with pytest.raises(RecordFailed, match="offset=10 .*int 5 does not fit column name"):
        write(writer, [bad])
    assert rows(engine, "strict") == [(1, "first")]  # each failed batch wrote nothing


def tolerated_records_are_reported_once_and_the_rest_written(engine: Engine) -> None:
    """errors.tolerance=all: each record that does not fit is rejected with Connect's stage and
    class, the others are written; a replay of the batch writes and rejects nothing again."""
    with engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE tolerant (id INTEGER PRIMARY KEY, name TEXT NOT NULL, at TIMESTAMP)"
        )
        connection.exec_driver_sql("INSERT INTO tolerant (id, name) VALUES (9, 'there')")
    writer = JdbcWriter(
        SinkSettings("tolerant", "insert", "record_key", ("id",), table_format="tolerant"), JSON, JSON, engine
    )
    wrong = Schema("struct", fields=(("id", Schema("int32")), ("name", Schema("int32"))))
    wider = Schema(
        "struct",
        fields=(("id", Schema("int32")), ("name", Schema("string")), ("colour", Schema("string", True))),
    )
    batch = [
        record(0, 1, "a"),
        Record("items", 0, 1, JSON.from_data(KEY, 5), b"not json"),
        Record("items", 0, 2, b"{oops", record(2, 5).value),
        record(3, 6, None),  # NOT NULL name
        Record("items", 0, 4, JSON.from_data(KEY, 7), JSON.from_data(wrong, {"id": 7, "name": 5})),
        Record(
            "items",
            0,
            5,
            JSON.from_data(KEY, 8),
            JSON.from_data(wider, {"id": 8, "name": "n", "colour": "red"}),
        ),
        record(6, 1, tombstone=True),
        record(7, 2, "b"),
        record(8, 9, "again"),  # a duplicate key: the database refuses the batch
        record(9, 3, "c"),
    ]
    rejected: list[Rejection] = []
    write(writer, batch, rejected.append)
    assert names(engine) == [(1, "a"), (2, "b"), (3, "c"), (9, "there")]
    assert [(r.record.offset, r.stage, r.class_name) for r in rejected] == [
        (1, "VALUE_CONVERTER", JSON.class_name),
        (2, "KEY_CONVERTER", JSON.class_name),
        *[(offset, "TASK_PUT", SINK_TASK) for offset in (3, 4, 5, 6, 8)],
    ]
    assert rejected[0].error.connect_class == "org.apache.kafka.connect.errors.DataException"
    assert "offset=8 key=" in str(rejected[-1].error) and re.search(
        "UNIQUE|duplicate key", str(rejected[-1].error)
    )
    assert "missing fields (colour)" in str(rejected[4].error)
    write(writer, batch, rejected.append)  # a replay
    assert len(rejected) == 7 and names(engine) == [(1, "a"), (2, "b"), (3, "c"), (9, "there")]
    with pytest.raises(RecordFailed, match=r"offset=11 key=.*(UNIQUE|duplicate key)"):
        write(writer, [record(10, 4, "d"), record(11, 9, "again")])  # errors.tolerance=none
    assert len(names(engine)) == 4
    write(writer, [record(10, 4, "d"), record(11, 9, "again")], rejected.append)
    assert [r.record.offset for r in rejected[7:]] == [11] and len(names(engine)) == 5


def names(engine: Engine) -> list[tuple[object, ...]]:
    return [found[:2] for found in rows(engine, "tolerant")]


def reads_ranges_again_exactly(engine: Engine) -> None:
    metadata = MetaData()
    table = Table(
        "events",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("name", Text),
        Column("updated", DateTime, nullable=False),
    )
    metadata.create_all(engine)
    base = datetime(2024, 1, 1)
    with engine.begin() as connection:
        connection.execute(
            insert(table),
            [{"id": i, "name": f"n{i}", "updated": base + timedelta(seconds=i // 3)} for i in range(1, 11)],
        )
    config = {
        "mode": "timestamp+incrementing",
        "incrementing.column.name": "id",
        "timestamp.column.name": "updated",
    }
    mode = Mode.of_config(config)
    now = datetime.now(UTC)
    with engine.connect() as connection:
        querier = Querier(connection, "events", mode)
        start = Position.initial(mode)
        end, more = querier.end(start, now, 4)
        assert more and end == Position(datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC), 4)
        assert end.to_offset() == {"timestamp": 1704067201000, "timestamp_nanos": 0, "incrementing": 4}
        assert [r["id"] for r in querier.rows(start, end, 2)] == [1, 2, 3, 4]
    with engine.begin() as connection:  # an update moves row 2 after the end: a replay skips it
        connection.execute(update(table).where(table.c.id == 2).values(updated=base + timedelta(hours=1)))
    with engine.connect() as connection:
        querier = Querier(connection, "events", mode)
        assert [r["id"] for r in querier.rows(start, end, 2)] == [1, 3, 4]
        assert querier.rows_after(end) == 7  # the connector's lag: 5 to 10, and the updated 2
        rest, more = querier.end(end, now, 100)
        assert not more and [r["id"] for r in querier.rows(end, rest, 100)] == [5, 6, 7, 8, 9, 10, 2]
        assert querier.end(rest, now, 100) == (rest, False)
        assert querier.rows_after(rest) == 0
        assert querier.key_schema() == Schema("int32")
        late = Mode.of_config({**config, "timestamp.delay.interval.ms": "1000"})
        assert (
            Querier(connection, "events", late).end(end, base + timedelta(seconds=3), 100)[0].incrementing
            == 5
        )
