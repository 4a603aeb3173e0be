"""Kafka Connect: a table into a topic, the topic into another table, and a topic with its
consumer group's position mirrored to a second cluster. A row's update is a new record keyed
by the row's primary key, not a change of the old record; the sink's upsert by that key keeps
the copy equal to the table. A group that read part of a topic on one cluster resumes on the
mirror where it stopped, because its offset was translated into the mirror's offsets.

The connectors are the ones a learner creates with `kctl connect create`, run by a connect
worker beside the lesson's cluster (one Spark application, started by the first connector).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from kctl.connect.client import ConnectClient
from kctl.kafka import groups, topics
from kctl.kafka.client import fetch_metadata
from kctl.learn.lab import Lab, LessonFailure
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show
from kctl.shell.errors import KctlError

TABLE, TOPIC = "customers", "shop-customers"  # the JDBC source's topic.prefix + table
ORDERS, GROUP = "orders", "billing"
MIRRORED = f"east.{ORDERS}"  # MirrorMaker 2's DefaultReplicationPolicy: <source alias>.<topic>
CUSTOMERS = [(1, "Ada", "Paris"), (2, "Grace", "Boston"), (3, "Alan", "Manchester")]
SPARK_WAIT_S = 240.0  # the worker's first connector waits for Spark to start
CONNECTOR_POLL_S = 0.5  # connectors move data a micro-batch (a second or more) at a time
READ_BEFORE_MOVING = 6
EXPIRED = 3  # orders 0-2 are past retention before the mirror starts: west numbers from order 3
T = TypeVar("T")
KEY_CONVERTER = {  # a key of plain JSON: customer 1's records are keyed b"1"
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "key.converter.schemas.enable": "false",
}


def _folder(lab: Lab) -> Path:
    folder = lab.dir.parent / "shop"
    folder.mkdir(exist_ok=True)
    return folder


def _now() -> str:
    """A timestamp as the JDBC source compares them on SQLite (SQLAlchemy's text form, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _rows(database: Path) -> list[tuple[int, str, str]]:
    if not database.exists():
        return []
    with closing(sqlite3.connect(database)) as db:
        try:
            return db.execute(f"SELECT id, name, city FROM {TABLE} ORDER BY id").fetchall()
        except sqlite3.OperationalError:  # the sink has not created its table yet
            return []


def _connectors(lab: Lab) -> ConnectClient:
    return ConnectClient(lab.connect_worker())


def _wait_for_connectors(lab: Lab, predicate: Callable[[], T | None], what: str) -> T:
    """`lab.wait` for what the connectors do; when it does not come, the failure says what
    state each connector's task is in, which is where a learner would look next."""
    try:
        return lab.wait(predicate, what, SPARK_WAIT_S, poll=CONNECTOR_POLL_S)
    except LessonFailure as failure:
        raise LessonFailure(f"{failure} ({_task_states(lab)})") from None


def _task_states(lab: Lab) -> str:
    try:
        listed = _connectors(lab).get("/connectors?expand=status")
    except KctlError as error:
        return f"the connect worker did not say: {error.message}"
    states = []
    for name, info in sorted(listed.items()):
        for task in info["status"]["tasks"] or [{"state": "no task"}]:
            trace = task.get("trace", "").strip().splitlines()
            states.append(f"{name}: {task['state']}" + (f", {trace[-1]}" if trace else ""))
    return "; ".join(states)


def _table_to_table(lab: Lab) -> str:
    shop, copy = _folder(lab) / "shop.db", _folder(lab) / "copy.db"
    with closing(sqlite3.connect(shop)) as db, db:
        db.execute(
            f"CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL, "
            "updated_at TIMESTAMP NOT NULL)"
        )
        db.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?)", [(*row, _now()) for row in CUSTOMERS])
    lab.create_topic(TOPIC, 1, 1)
    client = _connectors(lab)
    source = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": f"jdbc:sqlite:{shop}",
        "mode": "timestamp+incrementing",
        "incrementing.column.name": "id",
        "timestamp.column.name": "updated_at",
        "table.whitelist": TABLE,
        "topic.prefix": "shop-",
        "poll.interval.ms": "500",
        **KEY_CONVERTER,
    }
    sink = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "connection.url": f"jdbc:sqlite:{copy}",
        "topics": TOPIC,
        "table.name.format": TABLE,
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "pk.fields": "id",
        "auto.create": "true",
        **KEY_CONVERTER,
    }
    client.call("POST", "/connectors", {"name": "shop-in", "config": source})
    client.call("POST", "/connectors", {"name": "shop-out", "config": sink})
    _wait_for_connectors(lab, lambda: len(_rows(copy)) == len(CUSTOMERS) or None, "the copy's 3 customers")
    return f"shop.db's {TABLE} (3 rows) -> JdbcSource shop-in -> {TOPIC} -> JdbcSink shop-out -> copy.db"


def _update(lab: Lab) -> str:
    shop, copy = _folder(lab) / "shop.db", _folder(lab) / "copy.db"
    with closing(sqlite3.connect(shop)) as db, db:
        db.execute(f"UPDATE {TABLE} SET city = 'Lyon', updated_at = ? WHERE id = 1", (_now(),))
    _wait_for_connectors(lab, lambda: (1, "Ada", "Lyon") in _rows(copy) or None, "Ada in Lyon in the copy")
    lab.seen["records"] = [
        (m.key(), m.value()) for m in lab.read(TOPIC) if m.key() is not None and m.value() is not None
    ]
    return (
        f"UPDATE customers SET city = 'Lyon' WHERE id = 1; the topic holds {len(lab.seen['records'])} records"
    )


def _changelog(lab: Lab) -> Observed:
    records: list[tuple[bytes, bytes]] = lab.seen["records"]
    ada = [value for key, value in records if key == b"1"]
    copied = _rows(_folder(lab) / "copy.db") == _rows(_folder(lab) / "shop.db")
    held = len(records) == len(CUSTOMERS) + 1 and len(ada) == 2 and b"Paris" in ada[0] and b"Lyon" in ada[1]
    return Observed(
        held and copied,
        f"{len(records)} records; key 1 has {len(ada)} (Paris, then Lyon); "
        f"copy.db {'equals' if copied else 'differs from'} shop.db row by row",
    )


def _read_part_on_east(lab: Lab) -> str:
    lab.create_topic(ORDERS, 1, 1)
    lab.produce(ORDERS, [f"order {i}" for i in range(10)])
    read = lab.read_as_group(ORDERS, GROUP, READ_BEFORE_MOVING, max_poll_records=1)
    groups.commit_offsets(lab.conn, GROUP, {(ORDERS, 0): READ_BEFORE_MOVING})
    metadata = fetch_metadata(lab.conn.admin(), lab.conn)
    low, failure = topics.delete_records(lab.conn, metadata, {(ORDERS, 0): EXPIRED})
    if failure is not None:
        raise failure
    return (
        f"10 orders on east; group {GROUP} read {len(read)} and committed offset {READ_BEFORE_MOVING}; "
        f"orders before offset {low[(ORDERS, 0)]} deleted"
    )


def _mirror(lab: Lab) -> str:
    west = lab.neighbour()
    common = {
        "source.cluster.alias": "east",
        "target.cluster.alias": "west",
        "target.cluster.bootstrap.servers": west.bootstrap,
    }
    mirror = {"connector.class": "MirrorSource", "topics": ORDERS, **common}
    checkpoints = {
        "connector.class": "MirrorCheckpoint",
        "groups": GROUP,
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        **common,
    }
    client = _connectors(lab)
    client.call("POST", "/connectors", {"name": "east-to-west", "config": mirror})
    client.call("POST", "/connectors", {"name": "east-groups", "config": checkpoints})

    def translated() -> int | None:
        return groups.committed_offsets(west.conn, GROUP).get((MIRRORED, 0))

    lab.seen["translated"] = _wait_for_connectors(lab, translated, f"group {GROUP}'s offset on west")
    return f"topic {MIRRORED} on west; group {GROUP}'s offset 6 on east is {lab.seen['translated']} there"


def _move_group(lab: Lab) -> str:
    west = lab.neighbour()
    mirrored = 10 - EXPIRED
    _wait_for_connectors(
        lab, lambda: west.watermarks(MIRRORED)[1] >= mirrored, f"{mirrored} orders in {MIRRORED}"
    )
    read = west.read_as_group(MIRRORED, GROUP, 10 - READ_BEFORE_MOVING)
    lab.seen["moved"] = [value.decode() for m in read if (value := m.value()) is not None]
    return f"group {GROUP} on west read {len(read)} orders"


def _resumed(lab: Lab) -> Observed:
    moved = lab.seen["moved"]
    expected = [f"order {i}" for i in range(READ_BEFORE_MOVING, 10)]
    translated = lab.seen["translated"]
    return Observed(
        moved == expected and translated == READ_BEFORE_MOVING - EXPIRED,
        f"offset {READ_BEFORE_MOVING} on east became {translated} on west; "
        f"read: {', '.join(moved) or 'nothing'}",
    )


LESSON = Lesson(
    name="connect",
    title="Kafka Connect: tables, topics and another cluster",
    summary="a table streams into a topic and out into another table; a group moves to a mirrored cluster",
    seeds=("004",),
    brokers=1,
    broker_config={"offsets.topic.replication.factor": "1"},
    steps=(
        Narrate(
            "Kafka Connect runs beside the brokers and moves data in and out of topics, continuously. "
            "A **source connector** reads a system (here a SQLite table of customers) into a topic; a "
            "**sink connector** writes a topic into a system (here a second database). kctl's "
            "connect worker runs each connector as a Spark streaming query."
        ),
        Experiment("create the customers table and the two JDBC connectors", _table_to_table),
        Ask(
            "Ada moves from Paris to Lyon: her row is updated in the table. What does the topic get?",
            (
                "Her record in the topic is changed in place.",
                "A new record, keyed by her id, with the new city; the old record stays at its offset.",
                "Nothing: a source connector copies only new rows.",
            ),
            "b",
        ),
        Experiment("update Ada's row", _update),
        Show("the topic, the table's changelog", TOPIC, brokers=False),
        Check("the topic keeps both versions of Ada; the copy equals the table", _changelog),
        Explain(
            "Other servers run Kafka Connect to continuously import and export data as event streams "
            "to integrate Kafka with your existing systems such as relational databases as well as "
            "other Kafka clusters.",
            "004",
            "The topic is the table's history: an append-only log never changes a record, so an "
            "update is a new record with the same key. The sink upserts by that key, so the latest "
            "record of each key is the row.",
        ),
        Narrate(
            "Now a second cluster, **west**, in another data centre. MirrorMaker 2's connectors copy "
            "topic orders from **east** into west as east.orders, and carry consumer groups' "
            "positions over. Group billing has read 6 of 10 orders on east; the first 3 orders are "
            "then past retention, so the mirror starts from order 3."
        ),
        Experiment("write 10 orders on east; group billing reads 6; orders 0-2 expire", _read_part_on_east),
        Experiment("mirror orders and group billing's offsets to west", _mirror),
        Ask(
            "Group billing committed offset 6 on east. On west, east.orders holds orders 3 to 9 at "
            "offsets 0 to 6. The group moves to west. Where does it start?",
            (
                "At offset 6, as on east: it reads only order 9 and skips three.",
                "At offset 3, its offset translated to west's: it reads orders 6 to 9, unread so far.",
                "At offset 0: the copy is a new topic, so it reads orders 3 to 9 again.",
            ),
            "b",
        ),
        Experiment("start group billing on west", _move_group),
        Check("on west, billing started at the translated offset and read exactly orders 6 to 9", _resumed),
        Explain(
            "Other servers run Kafka Connect to continuously import and export data as event streams "
            "to integrate Kafka with your existing systems such as relational databases as well as "
            "other Kafka clusters.",
            "004",
            "Offsets are a partition's own numbering: the mirror's offsets need not equal the "
            "source's. The mirror records which source offset became which target offset "
            "(offset syncs), and the checkpoint connector translates each group's committed offset "
            "with them, so a group moves without reading twice or skipping.",
        ),
    ),
)
