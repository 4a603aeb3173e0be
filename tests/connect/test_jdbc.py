"""The JDBC connectors without Spark or a server: Confluent's URLs as SQLAlchemy's, configs
refused in Confluent's words, Connect's offsets and struct values, and the sink and source
against real SQLite databases."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import BigInteger, Column, DateTime, Double, Numeric, Text

from connect import plugins
from connect.converters import STRING_CONVERTER, TIMESTAMP, Converter, Schema
from connect.errors import ConnectError
from connect.jdbc import progress, types, urls
from connect.jdbc.querier import Mode, Position
from tests.connect import jdbc_cases

pytestmark = pytest.mark.unit


@pytest.fixture
def sqlite(tmp_path):
    return urls.engine(urls.sqlalchemy_url(f"jdbc:sqlite:{tmp_path / 'test.db'}"))


def test_jdbc_urls_become_sqlalchemy_urls():
    assert urls.sqlalchemy_url("jdbc:sqlite:/data/test.db").render_as_string() == "sqlite:////data/test.db"
    assert urls.sqlalchemy_url("jdbc:sqlite:test.db").database == "test.db"
    pg = urls.sqlalchemy_url(
        "jdbc:postgresql://db.example:6543/shop?user=ann&password=s3cret&sslmode=require"
    )
    assert pg.render_as_string(hide_password=False) == (
        "postgresql+psycopg://ann:s3cret@db.example:6543/shop?sslmode=require"
    )
    config = {"connection.url": "jdbc:postgresql://db/shop?user=ann", "connection.user": "bob"}
    found = urls.of_config({**config, "connection.password": "pw"})
    assert (found.username, found.password, found.port) == ("bob", "pw", 5432)
    with pytest.raises(urls.UnsupportedUrl, match="No suitable driver found for jdbc:mysql://h/db"):
        urls.sqlalchemy_url("jdbc:mysql://h/db")


def test_an_unreachable_database_is_one_line_of_reason(tmp_path):
    with pytest.raises(urls.DatabaseUnreachable) as caught:
        urls.reachable(urls.sqlalchemy_url(f"jdbc:sqlite:{tmp_path / 'no' / 'such' / 'dir.db'}"))
    assert "unable to open database file" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(urls.DatabaseUnreachable, match="cannot connect to postgresql"):
        urls.reachable(urls.sqlalchemy_url("jdbc:postgresql://127.0.0.1:1/none"))


def refusal(config):
    with pytest.raises(ConnectError) as caught:
        plugins.checked({"name": "n", **config})
    return caught.value.message


def test_configs_are_checked_as_confluent_checks_them():
    for name in ("io.confluent.connect.jdbc.JdbcSourceConnector", "JdbcSourceConnector", "JdbcSource"):
        assert plugins.find(name) is plugins.JDBC_SOURCE
    assert plugins.find("JdbcSink") is plugins.find("JdbcSinkConnector") is plugins.JDBC_SINK
    assert 'Missing required configuration "connection.url" which has no default value.' in refusal(
        {"connector.class": "JdbcSource", "mode": "bulk"}
    )
    assert "Query mode must be specified" in refusal(
        {"connector.class": "JdbcSource", "connection.url": "jdbc:sqlite:x"}
    )
    sink = {"connector.class": "JdbcSink", "connection.url": "jdbc:sqlite:x", "topics": "t"}
    assert "Deletes are only supported for pk.mode record_key" in refusal({**sink, "delete.enabled": "true"})
    assert "Expected value to be either true or false" in refusal({**sink, "auto.create": "yes"})
    assert "String must be one of: insert, upsert, update" in refusal({**sink, "insert.mode": "merge"})
    assert plugins.checked({"name": "n", **sink}) is plugins.JDBC_SINK
    infos = plugins.JDBC_SOURCE.validation({"connector.class": "JdbcSource"}).infos("JdbcSource")
    defaults = {c["definition"]["name"]: c["definition"]["default_value"] for c in infos["configs"]}
    assert defaults["poll.interval.ms"] == "5000" and defaults["batch.max.rows"] == "100"
    assert defaults["topic.prefix"] == "" and defaults["mode"] == ""


def test_offsets_are_confluents():
    mode = Mode.of_config({"mode": "timestamp+incrementing", "timestamp.column.name": "a, b"})
    assert mode.timestamps == ("a", "b")
    assert Position.initial(mode).to_offset() == {"timestamp": 0, "timestamp_nanos": 0, "incrementing": -1}
    at = Position(datetime(2024, 1, 1, 0, 0, 1, 234567, tzinfo=UTC), 42)
    assert at.to_offset() == {"timestamp": 1704067201234, "timestamp_nanos": 234567000, "incrementing": 42}
    assert Position.from_offset(at.to_offset()) == at
    assert Position.initial(Mode.of_config({"mode": "incrementing"})).to_offset() == {"incrementing": -1}


def test_committed_source_offsets_and_topics(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    (tmp_path / "offsets" / "0").write_text('v1\n{}\n{"items": {"incrementing": 7}}')
    (tmp_path / "commits" / "0").write_text("v1\n{}")
    config = {"topic.prefix": "db-"}
    assert progress.offsets(tmp_path, config) == [
        {"partition": {"protocol": "1", "table": "items"}, "offset": {"incrementing": 7}}
    ]
    assert progress.topics(tmp_path, config) == ["db-items"]
    assert progress.topics(tmp_path, {**config, "query": "SELECT 1"}) == ["db-"]


def test_struct_values_through_the_converters():
    schema = Schema(
        "struct", name="t", fields=(("id", Schema("int64")), ("at", Schema("int64", True, TIMESTAMP)))
    )
    row = {"id": 5, "at": datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)}
    enveloped = json.loads(Converter().from_data(schema, row))
    assert enveloped == {
        "schema": {
            "type": "struct",
            "fields": [
                {"type": "int64", "optional": False, "field": "id"},
                {"type": "int64", "optional": True, "name": TIMESTAMP, "version": 1, "field": "at"},
            ],
            "optional": False,
            "name": "t",
        },
        "payload": {"id": 5, "at": 1000},
    }
    assert Converter().to_data(json.dumps(enveloped).encode()).value == row
    assert json.loads(Converter(schemas_enable=False).from_data(schema, row)) == {"id": 5, "at": 1000}
    assert Converter(STRING_CONVERTER).from_data(schema, {"id": 5, "at": None}) == b"Struct{id=5}"
    assert (
        Converter().from_data(Schema("int32"), 7)
        == b'{"schema":{"type":"int32","optional":false},"payload":7}'
    )


def test_columns_as_connect_types():
    found = [
        types.column_schema(Column("c", kind, nullable=False))
        for kind in (BigInteger, Double, Numeric, Text, DateTime)
    ]
    assert [(s.type, s.name) for s in found] == [
        ("int64", None), ("double", None), ("double", None), ("string", None), ("int64", TIMESTAMP),
    ]  # fmt: skip


def test_sqlite_sink_upserts_deletes_and_skips_a_replayed_batch(sqlite):
    jdbc_cases.upserts_deletes_and_replays(sqlite)


def test_sqlite_sink_inserts_once(sqlite):
    jdbc_cases.inserts_once_with_kafka_coordinates(sqlite)


def test_sqlite_sink_fails_on_a_record_that_does_not_fit(sqlite):
    jdbc_cases.a_record_that_does_not_fit_fails_naming_it(sqlite)


def test_sqlite_sink_skips_and_reports_tolerated_records_once(sqlite):
    jdbc_cases.tolerated_records_are_reported_once_and_the_rest_written(sqlite)


def test_sqlite_source_reads_the_same_range_again(sqlite):
    jdbc_cases.reads_ranges_again_exactly(sqlite)
