"""The JDBC connectors on a worker, as the issue tells it: while a JDBC source reads a SQLite
table (timestamp+incrementing), 10,000 rows are inserted and 1,000 updated; the topic ends
with the latest value of each key, and a JDBC sink from it into PostgreSQL ends with a table
equal to the source's row by row, though the worker is SIGKILLed twice on the way. Beside it a
PostgreSQL table goes into SQLite (incrementing source, insert-mode sink: every row once).
One cluster, one worker and one PostgreSQL server serve the module; each restart of the
worker costs a Spark start, so there are just the two."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy import (
    Column,
    DateTime,
    Double,
    Engine,
    Integer,
    MetaData,
    Table,
    Text,
    event,
    func,
    insert,
    inspect,
    select,
    table,
    text,
    update,
)

from connect.converters import JSON_CONVERTER
from connect.jdbc import urls
from connect.jdbc.localpostgres import SUPERUSER, postgres_server
from kctl.cluster import localservice
from tests.cluster_harness import wait_until
from tests.service_harness import call
from tests.spark import test_connect
from tests.spark.helpers import consume_all
from tests.spark.test_connect import SPARK_WAIT_S, Worker

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect-jdbc"), pytest.mark.timeout(600)]

ROWS, UPDATES = 10_000, 1_000
IN_FLIGHT = 3_000  # rows the table may be ahead of its copy: each kill finds rows on their way
worker = test_connect.worker  # a cluster and a connect worker of this module's own
connectors_deleted = test_connect.connectors_deleted


@pytest.fixture(scope="module")
def postgres():
    with postgres_server() as server:
        yield server


def test_jdbc_plugins_are_listed_and_refuse_a_config_without_a_connection_url(worker):
    listed = call(worker.url, "GET", "/connector-plugins")[1]
    assert {
        "class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "type": "sink",
        "version": "3.9.0",
    } in listed
    status, body = call(
        worker.url,
        "POST",
        "/connectors",
        {"name": "j", "config": {"connector.class": "JdbcSource", "mode": "bulk"}},
    )
    assert (
        status == 400
        and 'Missing required configuration "connection.url" which has no default value.' in body["message"]
    )


def test_a_table_into_a_topic_into_a_table_survives_two_sigkills(worker, postgres):
    shop = _sqlite(worker.home / "shop.db")
    items = Table(
        "items",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("name", Text, nullable=False),
        Column("qty", Integer),
        Column("updated_at", DateTime, nullable=False),
    )
    items.create(shop)
    pg = urls.engine(urls.sqlalchemy_url(postgres.jdbc_url))
    worker.kctl("topic", "create", "sqlite-items", "-p", "2")
    _create(worker, "items-in", {
        "connector.class": "JdbcSource", "connection.url": f"jdbc:sqlite:{worker.home / 'shop.db'}",
        "mode": "timestamp+incrementing", "incrementing.column.name": "id",
        "timestamp.column.name": "updated_at", "topic.prefix": "sqlite-", "poll.interval.ms": "500",
    })  # fmt: skip
    _create(worker, "items-out", {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "connection.url": postgres.jdbc_url,
        "topics": "sqlite-items", "table.name.format": "items_copy", "insert.mode": "upsert",
        "pk.mode": "record_key", "pk.fields": "id", "auto.create": "true",
    })  # fmt: skip
    with shop.begin() as connection:
        connection.execute(insert(items), [_item(i) for i in range(1, 11)])
    wait_until(lambda: _count(pg, "items_copy") == 10, SPARK_WAIT_S, "the first rows copied", 0.5)

    stop = threading.Event()
    writing = threading.Thread(
        target=_write_items, args=(shop, items, lambda: _count(pg, "items_copy"), stop)
    )
    writing.start()
    try:
        wait_until(lambda: _count(pg, "items_copy") >= 2_000, SPARK_WAIT_S, "a part of the rows copied", 0.2)
        _kill_and_restart(worker)
        copied = _count(pg, "items_copy")
        wait_until(lambda: _count(pg, "items_copy") > copied, SPARK_WAIT_S, "copying after the restart", 0.2)
        _kill_and_restart(worker)
        writing.join()
    finally:
        stop.set()
        writing.join()

    expected = _table(shop, items)
    assert len(expected) == ROWS
    copied = Table("items_copy", MetaData(), autoload_with=pg)
    wait_until(lambda: _table(pg, copied) == expected, SPARK_WAIT_S, "the copy equal to the table", 1)
    bootstrap = _bootstrap(worker)
    latest = {}
    for message in consume_all(bootstrap, "sqlite-items"):
        latest[json.loads(message.key())["payload"]] = json.loads(message.value())["payload"]
    assert len(latest) == ROWS
    assert all(latest[row[0]]["name"] == row[1] and latest[row[0]]["qty"] == row[2] for row in expected)
    first = json.loads(consume_all(bootstrap, "sqlite-items")[0].value())["schema"]
    assert first["name"] == "items" and first["fields"][3] == {
        "type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,
        "field": "updated_at",
    }  # fmt: skip


def test_a_postgresql_table_into_sqlite_each_row_once(worker, postgres):
    """PostgreSQL as the source (incrementing, its serial key found by itself), SQLite as an
    insert-mode sink keyed by Kafka coordinates: every row once, the offsets Confluent's."""
    pg = urls.engine(urls.sqlalchemy_url(postgres.jdbc_url))
    orders = Table(
        "orders",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("item", Text),
        Column("amount", Double),
    )
    orders.create(pg)
    _insert_orders(pg, orders, range(200))
    worker.kctl("topic", "create", "pg-orders", "-p", "2")
    _create(worker, "orders-in", {
        "connector.class": "JdbcSourceConnector", "connection.url": postgres.jdbc_url, "mode": "incrementing",
        "table.whitelist": "orders", "topic.prefix": "pg-", "poll.interval.ms": "500",
    })  # fmt: skip
    _create(worker, "orders-out", {
        "connector.class": "JdbcSink", "connection.url": f"jdbc:sqlite:{worker.home / 'copy.db'}",
        "topics": "pg-orders", "table.name.format": "${topic}_copy", "pk.mode": "kafka",
        "auto.create": "true",
    })  # fmt: skip
    copy = _sqlite(worker.home / "copy.db")
    wait_until(lambda: _count(copy, "pg-orders_copy") >= 200, SPARK_WAIT_S, "the first orders copied", 0.5)
    _insert_orders(pg, orders, range(200, 400))
    wait_until(lambda: _count(copy, "pg-orders_copy") >= 400, SPARK_WAIT_S, "every order copied", 0.5)
    with copy.connect() as connection:
        columns = Table("pg-orders_copy", MetaData(), autoload_with=copy).c
        copied = sorted(
            tuple(r) for r in connection.execute(select(columns.id, columns.item, columns.amount))
        )
    assert copied == _table(pg, orders)  # each once
    committed = [{"partition": {"protocol": "1", "table": "orders"}, "offset": {"incrementing": 400}}]
    wait_until(lambda: _offsets(worker, "orders-in") == committed, 60, "the source's committed offset", 0.5)


def test_records_that_do_not_fit_go_to_the_dead_letter_queue_and_the_rest_to_the_table(worker):
    """errors.tolerance=all: a value the converter cannot read, a row without its NOT NULL
    column and a field the table lacks go to the queue, with Connect's stages; the rest is written."""
    path = worker.home / "tolerant.db"
    engine = _sqlite(path)
    Table(
        "people", MetaData(), Column("id", Integer, primary_key=True), Column("name", Text, nullable=False)
    ).create(engine)
    lines = [
        '{"id": 1, "name": "a"}',
        "not json",
        '{"id": 2}',
        '{"id": 3, "name": "c", "age": 5}',
        '{"id": 4, "name": "d"}',
    ]
    worker.kctl("topic", "create", "people", "-p", "1")
    worker.kctl("produce", "people", input="\n".join(lines) + "\n")
    _create(worker, "people-out", {
        "connector.class": "JdbcSink", "connection.url": f"jdbc:sqlite:{path}", "topics": "people",
        "pk.mode": "record_value", "pk.fields": "id",
        "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "false",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "people-dlq",
        "errors.deadletterqueue.context.headers.enable": "true",
    })  # fmt: skip
    people = Table("people", MetaData(), autoload_with=engine)
    wait_until(lambda: _count(engine, "people") >= 2, SPARK_WAIT_S, "the good rows", 0.5)
    assert _table(engine, people) == [(1, "a"), (4, "d")]

    def letters() -> list[dict]:
        consumed = worker.kctl("consume", "people-dlq", "-e", "--json").stdout.decode().splitlines()
        return [json.loads(line) for line in consumed]

    wait_until(lambda: len(letters()) >= 3, 60, "the dead letters", 0.5)
    found = letters()
    assert [letter["value"] for letter in found] == lines[1:4]  # once each, in offset order
    stages = [{h["key"]: h["value"] for h in letter["headers"]}["__connect.errors.stage"] for letter in found]
    assert stages == ["VALUE_CONVERTER", "TASK_PUT", "TASK_PUT"]
    context = {h["key"]: h["value"] for h in found[1]["headers"]}
    assert context["__connect.errors.class.name"] == "io.confluent.connect.jdbc.sink.JdbcSinkTask"
    assert "non-null column(s) name" in context["__connect.errors.exception.message"]
    assert _task(worker, "people-out")["state"] == "RUNNING"


def test_an_unreachable_database_fails_the_task_and_kctl_connect_create_says_so_with_exit_3(worker):
    config = {
        "name": "nowhere",
        "connector.class": "JdbcSink",
        "connection.url": "jdbc:postgresql://127.0.0.1:1/none",
        "topics": "t",
    }
    waited = ("--timeout", str(SPARK_WAIT_S))  # Spark may start with this connector
    refused = worker.kctl(
        "connect", "create", "-", *waited, input=json.dumps(config), expect=3, timeout=SPARK_WAIT_S + 30
    )
    assert refused.stderr.count("\n") == 1
    assert refused.stderr.startswith("kctl: error: connector nowhere was created, but its task failed: ")
    assert "DatabaseUnreachable: cannot connect to postgresql+psycopg://127.0.0.1:1/none" in refused.stderr
    assert _task(worker, "nowhere")["state"] == "FAILED"


def test_postgresql_changes_into_a_topic_in_debeziums_envelope(worker, postgres):
    """PostgresConnector: the table's rows as reads (r), then an insert, an update and a
    delete (c, u, d and a tombstone), in commit order, keyed by the primary key."""
    pg = urls.engine(urls.sqlalchemy_url(postgres.jdbc_url))
    with pg.begin() as connection:
        connection.execute(text("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL)"))
        connection.execute(text("INSERT INTO accounts VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')"))
    worker.kctl("topic", "create", "cdc.public.accounts", "-p", "1")
    plain = {
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "false",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "false",
    }
    _create(worker, "accounts-cdc", {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.port": str(postgres.port), "database.user": SUPERUSER,
        "database.dbname": postgres.database, "topic.prefix": "cdc", "table.include.list": "public.accounts",
        "slot.name": "accounts", "plugin.name": "wal2json", **plain,
    })  # fmt: skip
    bootstrap = _bootstrap(worker)

    def changes() -> list[tuple]:
        found = []
        for message in consume_all(bootstrap, "cdc.public.accounts"):
            value = message.value() and json.loads(message.value())
            found.append((json.loads(message.key())["id"], value and value["op"], value and value["after"]))
        return found

    wait_until(lambda: len(changes()) >= 3, SPARK_WAIT_S, "the snapshot's reads", 0.5)
    with pg.begin() as connection:
        connection.execute(text("INSERT INTO accounts VALUES (4, 'di')"))
    with pg.begin() as connection:
        connection.execute(text("UPDATE accounts SET owner = 'ann b' WHERE id = 1"))
    with pg.begin() as connection:
        connection.execute(text("DELETE FROM accounts WHERE id = 2"))
    wait_until(lambda: len(changes()) >= 7, SPARK_WAIT_S, "the changes", 0.5)
    assert changes() == [
        (1, "r", {"id": 1, "owner": "ann"}),
        (2, "r", {"id": 2, "owner": "bob"}),
        (3, "r", {"id": 3, "owner": "cy"}),
        (4, "c", {"id": 4, "owner": "di"}),
        (1, "u", {"id": 1, "owner": "ann b"}),
        (2, "d", None),
        (2, None, None),
    ]
    assert call(worker.url, "GET", "/connectors/accounts-cdc/topics")[1] == {
        "accounts-cdc": {"topics": ["cdc.public.accounts"]}
    }


def _sqlite(path) -> Engine:
    engine = urls.engine(urls.sqlalchemy_url(f"jdbc:sqlite:{path}"))
    event.listen(engine, "connect", lambda dbapi, _: dbapi.execute("PRAGMA journal_mode=WAL"))
    return engine


def _item(i: int, name: str = "new") -> dict:
    now = datetime.now(UTC).replace(tzinfo=None)
    return {
        "id": i,
        "name": f"{name} {i}",
        "qty": i % 7,
        "updated_at": now.replace(microsecond=now.microsecond // 1000 * 1000),
    }


def _write_items(engine: Engine, items: Table, copied: Callable[[], int], stop: threading.Event) -> None:
    """The rest of the rows, and UPDATES updates of rows already there, in small transactions,
    never more than IN_FLIGHT rows ahead of the `copied` ones: however fast the worker copies,
    the table is not all copied before the second kill. Ends early when `stop` is set."""
    chosen, batch = random.Random(7), 250
    for start in range(11, ROWS + 1, batch):
        end = min(start + batch, ROWS + 1)
        while end - copied() > IN_FLIGHT:
            if stop.wait(0.1):
                return
        with engine.begin() as connection:
            connection.execute(insert(items), [_item(i) for i in range(start, end)])
            for i in chosen.sample(range(1, end), UPDATES * batch // ROWS):
                connection.execute(update(items).where(items.c.id == i).values(**_item(i, "updated")))


def _insert_orders(engine: Engine, orders: Table, numbers: range) -> None:
    with engine.begin() as connection:
        connection.execute(insert(orders), [{"item": f"item {n}", "amount": n / 4} for n in numbers])


def _kill_and_restart(worker: Worker) -> None:
    running = localservice.running(worker.cluster_dir, localservice.CONNECT)
    assert running is not None
    os.kill(running.pid, signal.SIGKILL)
    worker.kctl("connect", "up")


def _create(worker: Worker, name: str, config: dict) -> None:
    status, body = call(worker.url, "POST", "/connectors", {"name": name, "config": config})
    assert status == 201, body


def _offsets(worker: Worker, name: str) -> list[dict]:
    return call(worker.url, "GET", f"/connectors/{name}/offsets")[1]["offsets"]


def _task(worker: Worker, name: str) -> dict:
    return call(worker.url, "GET", f"/connectors/{name}/status")[1]["tasks"][0]


def _count(engine: Engine, name: str) -> int:
    if not inspect(engine).has_table(name):
        return 0
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(table(name))).scalar_one()


def _table(engine: Engine, table: Table) -> list[tuple]:
    with engine.connect() as connection:
        return [tuple(r) for r in connection.execute(select(table).order_by(table.c.id))]


def _bootstrap(worker: Worker) -> str:
    brokers = json.loads(worker.kctl("cluster", "status", "--json").stdout)["brokers"]
    return ",".join(f"{b['host']}:{b['port']}" for b in brokers)
