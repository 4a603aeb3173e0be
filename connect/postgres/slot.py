"""The database side of PostgresConnector, through SQL functions (no replication protocol):
the logical replication slot (created with wal2json, peeked between two LSNs, advanced once
Spark has committed a batch) and the snapshot of the captured tables' rows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from sqlalchemy import URL, Connection, Engine, text

from connect.jdbc import urls
from connect.postgres import config as settings
from connect.postgres.wal2json import Change, Column, Transaction, format_lsn, parse_lsn, transactions

PEEK = (
    "SELECT xid::text, data FROM pg_logical_slot_peek_changes(:slot, CAST(:upto AS pg_lsn), :changes, "
    "'format-version', '2', 'include-lsn', '1', 'include-timestamp', '1', 'include-pk', '1', "
    "'include-not-null', '1')"
)
TABLES = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%' ORDER BY 1, 2
"""
COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
       COALESCE(a.attnum = ANY (i.indkey), false)
FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = CAST(:table AS regclass) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
"""


def url(config: Mapping[str, str]) -> URL:
    return URL.create(
        "postgresql+psycopg",
        username=config["database.user"].strip(),
        password=config.get("database.password") or None,
        host=config["database.hostname"].strip(),
        port=int(config.get("database.port", "5432")),
        database=config["database.dbname"].strip(),
    )


def engine(config: Mapping[str, str]) -> Engine:
    return urls.engine(url(config))


def ensure(database: Engine, slot: str) -> int:
    """The slot's confirmed position, creating the slot (with wal2json) when there is none.
    Creating one waits for the transactions running then, and cannot be in one that wrote."""
    with database.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        found = connection.execute(
            text(
                "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                "WHERE slot_name = :slot AND database = current_database()"
            ),
            {"slot": slot},
        ).scalar()
        if found is None:
            created = text("SELECT lsn::text FROM pg_create_logical_replication_slot(:slot, :plugin)")
            found = connection.execute(created, {"slot": slot, "plugin": settings.PLUGIN}).scalar_one()
        return parse_lsn(str(found))


def current_lsn(connection: Connection) -> int:
    return parse_lsn(str(connection.execute(text("SELECT pg_current_wal_lsn()::text")).scalar_one()))


def peek(
    connection: Connection, slot: str, start: int, end: int, changes: int | None = None
) -> list[Transaction]:
    """The transactions that committed after `start` and up to `end`, the slot left as it is:
    the same range peeked again gives the same transactions while the slot is not advanced
    past `start`. With `changes`, decoding stops at the first commit past that many changes."""
    rows = connection.execute(text(PEEK), {"slot": slot, "upto": format_lsn(end), "changes": changes})
    return [
        t for t in transactions((str(xid), str(data)) for xid, data in rows) if start < t.commit_lsn <= end
    ]


def advance(connection: Connection, slot: str, lsn: int) -> None:
    """Let the slot drop what is committed up to `lsn` (never backwards: PostgreSQL refuses it)."""
    confirmed = connection.execute(
        text("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = :slot"),
        {"slot": slot},
    ).scalar()
    if confirmed is not None and parse_lsn(str(confirmed)) < lsn:
        connection.execute(text("SELECT pg_replication_slot_advance(:slot, CAST(:lsn AS pg_lsn))"),
                           {"slot": slot, "lsn": format_lsn(lsn)})  # fmt: skip
        connection.commit()


def captured_tables(connection: Connection, config: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(s, t) for s, t in connection.execute(text(TABLES)) if settings.captured(config, s, t)]


def snapshot(connection: Connection, config: Mapping[str, str], lsn: int) -> Iterator[Change]:
    """Every captured table's rows as reads (op `r`), table by table in name order, each in
    primary-key order, all in the caller's transaction (REPEATABLE READ: one consistent view)."""
    quote = connection.dialect.identifier_preparer.quote
    for schema, table in captured_tables(connection, config):
        name = f"{quote(schema)}.{quote(table)}"
        described = connection.execute(text(COLUMNS), {"table": name}).all()
        key = tuple(str(column) for column, _, _, primary in described if primary)
        texts = ", ".join(f"{quote(column)}::text" for column, *_ in described)
        order = ", ".join(quote(column) for column in key) or "1"
        for row in connection.execute(text(f"SELECT {texts} FROM {name} ORDER BY {order}")):  # noqa: S608
            cells = tuple(
                Column(str(column), str(kind), cell, bool(optional))
                for (column, kind, optional, _), cell in zip(described, row, strict=True)
            )
            yield Change("r", schema, table, lsn, cells, (), key)
