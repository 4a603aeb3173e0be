"""PostgresConnector without a server: wal2json's format-version 2 messages decoded into
transactions, Debezium's envelope and records built from them, and configs refused."""

from __future__ import annotations

import json

import pytest

from connect import plugins
from connect.converters import JSON_CONVERTER, Converter
from connect.postgres import config, envelope
from connect.postgres.envelope import Origin, records
from connect.postgres.source import Settings
from connect.postgres.wal2json import Change, Column, format_lsn, parse_lsn, transactions

pytestmark = pytest.mark.unit

INT, TEXT = "integer", "text"
KEY = [{"name": "id", "type": INT}]
PLAIN, WITH_SCHEMA = Converter(JSON_CONVERTER, False), Converter(JSON_CONVERTER, True)
PLAIN_SETTINGS = Settings({}, PLAIN, PLAIN)


def _message(action: str, **fields: object) -> str:
    return json.dumps({"action": action, "timestamp": "2026-11-28 11:39:08.498051+00", **fields})


def _columns(**values: object) -> list[dict[str, object]]:
    return [
        {"name": n, "type": INT if isinstance(v, int) else TEXT, "value": v, "optional": n != "id"}
        for n, v in values.items()
    ]


WAL = [
    ("725", _message("B", lsn="0/152BC80", nextlsn="0/152BCB0")),
    ("725", _message("I", lsn="0/152BB00", schema="public", table="t", columns=_columns(id=1, name="a"),
                     pk=KEY)),
    ("725", _message("C", lsn="0/152BC80", nextlsn="0/152BCB0")),
    ("726", _message("B", lsn="0/152BE70", nextlsn="0/152BEA0")),
    ("726", _message("U", lsn="0/152BCB0", schema="public", table="t", columns=_columns(id=1, name="z"),
                     identity=[{"name": "id", "type": INT, "value": 1}], pk=KEY)),
    ("726", _message("D", lsn="0/152BDB8", schema="public", table="t",
                     identity=[{"name": "id", "type": INT, "value": 1}], pk=KEY)),
    ("726", _message("C", lsn="0/152BE70", nextlsn="0/152BEA0")),
    ("727", _message("B", lsn="0/152C0A8", nextlsn="0/152C110")),
    ("727", _message("I", lsn="0/152BFF0", schema="public", table="t", columns=_columns(id=2, name="b"),
                     pk=KEY)),
]  # fmt: skip


def test_lsns_are_read_and_written_as_postgresql_shows_them():
    assert parse_lsn("0/152BB00") == 0x152BB00
    assert parse_lsn("1A/0") == 0x1A << 32
    assert format_lsn(parse_lsn("16/B374D848")) == "16/B374D848"


def test_wal2json_messages_are_transactions_of_changes_in_commit_order_the_unfinished_left_out():
    found = transactions(WAL)
    assert [(t.xid, format_lsn(t.commit_lsn)) for t in found] == [(725, "0/152BCB0"), (726, "0/152BEA0")]
    assert found[0].ts_ms == 1795865948498
    assert [c.op for t in found for c in t.changes] == ["c", "u", "d"]
    insert, update, delete = [c for t in found for c in t.changes]
    assert insert.row == (Column("id", INT, 1, False), Column("name", TEXT, "a", True)) and insert.key == (
        "id",
    )
    assert update.identity == (Column("id", INT, 1),) and delete.row == () and delete.lsn == 0x152BDB8


def _plain(change: Change, tombstones: bool = True) -> list[tuple[str, object, object]]:
    """The change's records as JsonConverter without schemas writes them, read back."""
    origin = Origin("shop", "postgres", 726, 1000)
    encoded = [PLAIN_SETTINGS.encoded(r) for r in records(change, origin, tombstones, 2000)]
    return [(topic, key and json.loads(key), value and json.loads(value)) for topic, key, value in encoded]


def test_an_insert_is_a_create_keyed_by_its_primary_key_in_debeziums_envelope():
    insert = transactions(WAL)[0].changes[0]
    [(topic, key, value)] = _plain(insert)
    assert topic == "shop.public.t" and key == {"id": 1}
    assert value == {
        "before": None,
        "after": {"id": 1, "name": "a"},
        "source": {
            "version": envelope.DEBEZIUM_VERSION, "connector": "postgresql", "name": "shop", "ts_ms": 1000,
            "snapshot": "false", "db": "postgres", "schema": "public", "table": "t", "txId": 726,
            "lsn": 0x152BB00,
        },
        "op": "c",
        "ts_ms": 2000,
    }  # fmt: skip


def test_an_update_has_the_old_key_before_and_a_delete_is_followed_by_a_tombstone():
    _, update, delete = [c for t in transactions(WAL) for c in t.changes]
    [(_, key, value)] = _plain(update)
    assert key == {"id": 1} and value["before"] == {"id": 1} and value["after"] == {"id": 1, "name": "z"}
    assert value["op"] == "u"
    deleted, tombstone = _plain(delete)
    assert deleted[1] == {"id": 1} and deleted[2]["before"] == {"id": 1} and deleted[2]["after"] is None
    assert deleted[2]["op"] == "d" and tombstone == ("shop.public.t", {"id": 1}, None)
    assert len(_plain(delete, tombstones=False)) == 1


def test_an_update_of_the_key_is_a_delete_a_tombstone_and_a_create():
    moved = Change("u", "public", "t", 1, (Column("id", INT, 3), Column("name", TEXT, "b")),
                   (Column("id", INT, 2),), ("id",))  # fmt: skip
    found = _plain(moved)
    assert [(key, value and value["op"]) for _, key, value in found] == [
        ({"id": 2}, "d"),
        ({"id": 2}, None),
        ({"id": 3}, "c"),
    ]


def test_snapshot_reads_are_marked_first_true_and_last():
    reads = [Change("r", "public", "t", 1, (Column("id", INT, n),), (), ("id",)) for n in range(3)]
    assert [mark for _, mark in envelope.snapshot_marks(reads)] == ["first", "true", "last"]
    assert [mark for _, mark in envelope.snapshot_marks(reads[:1])] == ["last"]


def test_columns_take_debeziums_types_from_wal2json_and_from_a_snapshots_text():
    row = (
        Column("n", "numeric(10,2)", 1.5),
        Column("at", "timestamp without time zone", "1970-01-01 00:00:01.000002"),
        Column("tz", "timestamp with time zone", "2026-01-02 01:04:05+00"),
        Column("d", "date", "1970-01-11"),
        Column("b", "bytea", "\\x0102"),
        Column("ok", "boolean", "true"),
        Column("big", "bigint", "7"),
    )
    change = Change("r", "public", "t", 1, row)
    [(_, key, value)] = _plain(change)
    assert key is None  # no primary key
    assert value["after"] == {
        "n": 1.5, "at": 1_000_002, "tz": "2026-01-02T01:04:05Z", "d": 10, "b": "AQI=", "ok": True, "big": 7,
    }  # fmt: skip


def test_with_schemas_the_envelope_is_debeziums_schema_and_payload():
    insert = transactions(WAL)[0].changes[0]
    [record] = records(insert, Origin("shop", "postgres", 1, 1), True, 2)
    assert record.value is not None and record.value.schema is not None
    written = json.loads(WITH_SCHEMA.from_data(record.value.schema, record.value.value))
    schema = written["schema"]
    assert schema["name"] == "shop.public.t.Envelope" and written["payload"]["op"] == "c"
    fields = {f["field"]: f for f in schema["fields"]}
    assert list(fields) == ["before", "after", "source", "op", "ts_ms"]
    assert fields["after"]["name"] == "shop.public.t.Value" and fields["after"]["optional"] is True
    assert fields["after"]["fields"][0] == {"type": "int32", "optional": False, "field": "id"}
    assert fields["source"]["name"] == "io.debezium.connector.postgresql.Source"


def test_the_plugin_is_found_by_its_names_and_refuses_other_decoders_and_both_table_lists():
    for name in ("io.debezium.connector.postgresql.PostgresConnector", "PostgresConnector", "Postgres"):
        assert plugins.find(name) is plugins.POSTGRES
    good = {
        "name": "cdc", "connector.class": "Postgres", "database.hostname": "localhost",
        "database.user": "u", "database.dbname": "db", "topic.prefix": "shop",
    }  # fmt: skip
    assert plugins.POSTGRES.validation(good).messages() == []
    refused = plugins.POSTGRES.validation({**good, "plugin.name": "decoderbufs"}).messages()
    assert refused == [
        "Invalid value decoderbufs for configuration plugin.name: this worker decodes changes with the "
        "wal2json output plugin only (plugin.name=wal2json)"
    ]
    both = {**good, "table.include.list": "public.a", "table.exclude.list": "public.b"}
    assert len(plugins.POSTGRES.validation(both).messages()) == 2
    assert plugins.POSTGRES.validation({**good, "snapshot.mode": "always"}).messages()


def test_tables_are_captured_by_whole_regexes_of_schema_and_table():
    assert config.captured({}, "public", "t")
    included = {"table.include.list": "public\\.orders.*, inventory\\..*"}
    assert config.captured(included, "public", "orders_2026") and config.captured(included, "inventory", "x")
    assert not config.captured(included, "public", "t") and not config.captured(included, "other", "orders")
    assert not config.captured({"table.exclude.list": "public.t"}, "public", "t")
