"""PostgresConnector's reader against a real PostgreSQL server (wal_level=logical, wal2json),
without Spark: the snapshot's reads, then changes in commit order, the same LSN range peeked
twice the same, and the slot advanced once a batch is committed."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from sqlalchemy import text

from connect.converters import JSON_CONVERTER, Converter
from connect.jdbc.localpostgres import SUPERUSER, postgres_server
from connect.postgres import slot
from connect.postgres.source import PostgresReader, Settings, lag
from connect.queryspec import QuerySpec

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def server():
    with postgres_server() as running:
        yield running


def _settings(server, **more: str) -> Settings:
    config = {
        "database.hostname": "127.0.0.1", "database.port": str(urlsplit(server.jdbc_url[5:]).port),
        "database.user": SUPERUSER, "database.dbname": server.database, "topic.prefix": "shop",
        "table.include.list": "public\\.items", **more,
    }  # fmt: skip
    plain = Converter(JSON_CONVERTER, False)
    return Settings(config, plain, plain)


def _batch(reader: PostgresReader, start: dict) -> tuple[dict, list[tuple[str, object, object]]]:
    """The next batch's end and its records, decoded; the batch is not committed."""
    end = reader.latestOffset(start, None)
    found = []
    for partition in reader.partitions(start, end):
        for topic, key, value in reader.read(partition):
            found.append((topic, key and json.loads(key), value and json.loads(value)))
    return end, found


def _sql(settings: Settings, *statements: str) -> None:
    with settings.database.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))


def test_a_snapshot_then_changes_in_commit_order_each_batch_read_again_the_same(server, tmp_path):
    settings = _settings(server)
    _sql(settings, "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)",
         "CREATE TABLE other (id int)", "INSERT INTO items VALUES (1, 'a'), (2, 'b')")  # fmt: skip
    reader = PostgresReader(settings)
    start = reader.initialOffset()
    assert start["snapshot"] is True
    snapshot_end, reads = _batch(reader, start)
    assert [(t, k, v["op"], v["after"], v["source"]["snapshot"]) for t, k, v in reads] == [
        ("shop.public.items", {"id": 1}, "r", {"id": 1, "name": "a"}, "first"),
        ("shop.public.items", {"id": 2}, "r", {"id": 2, "name": "b"}, "last"),
    ]
    assert snapshot_end == {"lsn": start["lsn"], "tables": ["public.items"]}
    reader.commit(snapshot_end)

    _sql(settings, "INSERT INTO items VALUES (3, 'c')", "INSERT INTO other VALUES (1)")
    _sql(settings, "UPDATE items SET name = 'z' WHERE id = 1")
    _sql(settings, "DELETE FROM items WHERE id = 2")
    end, changes = _batch(reader, snapshot_end)
    assert [(k, v and v["op"], v and v["before"], v and v["after"]) for _, k, v in changes] == [
        ({"id": 3}, "c", None, {"id": 3, "name": "c"}),
        ({"id": 1}, "u", {"id": 1}, {"id": 1, "name": "z"}),
        ({"id": 2}, "d", {"id": 2}, None),
        ({"id": 2}, None, None, None),  # the tombstone
    ]
    first = changes[0][2]["source"]
    assert first["snapshot"] == "false" and first["txId"] > 0 and first["lsn"] > start["lsn"]
    replayed = [r for p in reader.partitions(snapshot_end, end) for r in reader.read(p)]  # as Spark replays
    assert [(t, k and json.loads(k), v and _unstamped(json.loads(v))) for t, k, v in replayed] == [
        (t, k, v and _unstamped(v)) for t, k, v in changes
    ]
    with settings.database.connect() as connection:
        assert len(slot.peek(connection, settings.slot, snapshot_end["lsn"], end["lsn"])) == 3
    spec = QuerySpec("cdc", settings.config, {}, {}, tmp_path)  # no batch committed in its checkpoint
    assert lag(spec) == 3  # the other table's insert is not captured
    reader.commit(end)
    assert lag(spec) == 0
    with settings.database.connect() as connection:
        assert slot.peek(connection, settings.slot, 0, slot.current_lsn(connection)) == []
    assert reader.latestOffset(end, None) == end  # nothing new: no batch


def test_replica_identity_full_gives_the_old_row_and_snapshot_never_reads_no_rows(server):
    settings = _settings(server, **{"slot.name": "full", "snapshot.mode": "never",
                                    "table.include.list": "public\\.people"})  # fmt: skip
    _sql(settings, "CREATE TABLE people (id int PRIMARY KEY, name text)",
         "INSERT INTO people VALUES (1, 'a')", "ALTER TABLE people REPLICA IDENTITY FULL")  # fmt: skip
    reader = PostgresReader(settings)
    start = reader.initialOffset()
    assert "snapshot" not in start and reader.latestOffset(start, None) == start
    _sql(settings, "UPDATE people SET name = 'b' WHERE id = 1", "DELETE FROM people WHERE id = 1")
    _, changes = _batch(reader, start)
    assert [(v and v["op"], v and v["before"]) for _, _, v in changes] == [
        ("u", {"id": 1, "name": "a"}),
        ("d", {"id": 1, "name": "b"}),
        (None, None),
    ]


def _unstamped(value: dict) -> dict:
    """A change without its processing time, the one field a replay writes anew."""
    return {name: field for name, field in value.items() if name != "ts_ms"}
