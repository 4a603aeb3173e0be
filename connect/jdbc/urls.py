"""Confluent's `connection.url` (a JDBC URL) as a SQLAlchemy engine: `jdbc:sqlite:PATH` and
`jdbc:postgresql://HOST[:PORT]/DB[?user=&password=]`, with `connection.user` and
`connection.password` winning over the URL's, as the PostgreSQL JDBC driver lets properties do."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from sqlalchemy import URL, Connection, Engine, create_engine, event, inspect
from sqlalchemy.exc import SQLAlchemyError

CONNECT_TIMEOUT_S = 10  # an unreachable server fails the task within this, not never
SQLITE_BUSY_S = 30  # how long SQLite waits for another writer's lock
_engines: dict[URL, Engine] = {}
_lock = threading.Lock()


class UnsupportedUrl(ValueError):
    """A `connection.url` naming a database this worker has no driver for."""


class DatabaseUnreachable(RuntimeError):
    """The database cannot be connected to: the task fails with this one-line reason."""


def sqlalchemy_url(jdbc: str, user: str | None = None, password: str | None = None) -> URL:
    """The SQLAlchemy URL of a JDBC URL (sqlite, postgresql+psycopg)."""
    if jdbc.startswith("jdbc:sqlite:"):
        path = jdbc.removeprefix("jdbc:sqlite:").split("?", 1)[0]
        if path.startswith("file:"):
            path = urlsplit(path).path
        return URL.create("sqlite", database=None if path in ("", ":memory:") else path)
    if jdbc.startswith("jdbc:postgresql:"):
        parts = urlsplit(jdbc.removeprefix("jdbc:"))
        query = dict(parse_qsl(parts.query))
        return URL.create(
            "postgresql+psycopg",
            username=user or query.pop("user", None),
            password=password or query.pop("password", None),
            host=parts.hostname or "localhost",
            port=parts.port or 5432,
            database=parts.path.lstrip("/") or None,
            query={k: v for k, v in query.items() if k not in ("user", "password")},
        )
    raise UnsupportedUrl(
        f"No suitable driver found for {jdbc}: this worker takes jdbc:sqlite: and jdbc:postgresql:"
    )


def of_config(config: Mapping[str, str]) -> URL:
    """The SQLAlchemy URL of a connector's `connection.url`, `connection.user` and `connection.password`."""
    return sqlalchemy_url(
        config["connection.url"].strip(),
        config.get("connection.user") or None,
        config.get("connection.password") or None,
    )


def engine(url: URL) -> Engine:
    """One engine (and connection pool) per database and process: Spark's Python workers
    read many partitions of the same tables."""
    with _lock:
        found = _engines.get(url)
        if found is None:
            if url.get_backend_name() == "sqlite":
                found = _transactional(create_engine(url, connect_args={"timeout": SQLITE_BUSY_S}))
            else:
                found = create_engine(
                    url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S}, pool_pre_ping=True
                )
            _engines[url] = found
        return found


def _transactional(sqlite: Engine) -> Engine:
    """SQLite in SQLAlchemy's transactions, DDL and savepoints included: Python's sqlite3
    begins a transaction only before a DML statement (a savepoint before it would commit on
    its release), so the driver is put in autocommit and SQLAlchemy's begin emits BEGIN."""

    @event.listens_for(sqlite, "connect")
    def _autocommit(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(sqlite, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN")

    return sqlite


def reachable(url: URL) -> Engine:
    """The engine, once a connection works; DatabaseUnreachable with the driver's reason otherwise."""
    found = engine(url)
    try:
        with found.connect() as connection:
            inspect(connection).get_table_names()
    except SQLAlchemyError as exc:
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
        raise DatabaseUnreachable(f"cannot connect to {url.render_as_string()}: {reason}") from None
    return found
