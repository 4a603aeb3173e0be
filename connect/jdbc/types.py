"""Columns as Connect schemas (a source's rows) and Connect schemas as columns (a sink's
auto.create and auto.evolve), following Confluent's GenericDatabaseDialect where SQLAlchemy's
reflected types allow: INTEGER int32, BIGINT int64, SMALLINT int16, REAL/FLOAT/DOUBLE double,
NUMERIC double (Confluent: a Decimal), BOOLEAN boolean, text types string, BLOB/BYTEA bytes,
TIMESTAMP/DATE/TIME Connect's logical Timestamp/Date/Time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Double,
    Float,
    Integer,
    LargeBinary,
    Numeric,
    SmallInteger,
    Table,
    Text,
    Time,
)
from sqlalchemy.types import TypeEngine

from connect.converters import DATE, TIME, TIMESTAMP, Schema, utc

# most specific first: BigInteger and SmallInteger are Integers
_CONNECT_TYPES: tuple[tuple[type[TypeEngine[Any]], str, str | None], ...] = (
    (Boolean, "boolean", None),
    (BigInteger, "int64", None),
    (SmallInteger, "int16", None),
    (Integer, "int32", None),
    (Float, "double", None),  # not a Numeric in SQLAlchemy 2.1
    (Numeric, "double", None),
    (DateTime, "int64", TIMESTAMP),
    (Date, "int32", DATE),
    (Time, "int32", TIME),
    (LargeBinary, "bytes", None),
)
_COLUMN_TYPES: dict[tuple[str, str | None], type[TypeEngine[Any]]] = {
    ("int8", None): SmallInteger,
    ("int16", None): SmallInteger,
    ("int32", None): Integer,
    ("int64", None): BigInteger,
    ("float", None): Float,
    ("double", None): Double,
    ("boolean", None): Boolean,
    ("string", None): Text,
    ("bytes", None): LargeBinary,
    ("int64", TIMESTAMP): DateTime,
    ("int32", DATE): Date,
    ("int32", TIME): Time,
}


def column_schema(column: Column[Any]) -> Schema:
    """A column's Connect schema; a type we do not know is read as a string (Confluent skips it)."""
    for kind, connect_type, logical in _CONNECT_TYPES:
        if isinstance(column.type, kind):
            return Schema(connect_type, bool(column.nullable), logical)
    if isinstance(column.type, LargeBinary) or _python_type(column.type) is bytes:
        return Schema("bytes", bool(column.nullable))
    return Schema("string", bool(column.nullable))


def struct_schema(name: str, columns: Iterable[Column[Any]]) -> Schema:
    """A row's schema: a struct named after its table, as Confluent's source names it."""
    return Schema("struct", False, name, tuple((c.name, column_schema(c)) for c in columns))


def value_schema(value: object) -> Schema:
    """The schema of a value without a declared one (a custom query's column, schemaless JSON)."""
    for kind, schema in (
        (bool, Schema("boolean", True)),
        (int, Schema("int64", True)),
        (float, Schema("double", True)),
        (datetime, Schema("int64", True, TIMESTAMP)),
        (date, Schema("int32", True, DATE)),
        (time, Schema("int32", True, TIME)),
        (bytes, Schema("bytes", True)),
    ):
        if isinstance(value, kind):
            return schema
    return Schema("string", True)


def column_type(schema: Schema) -> TypeEngine[Any]:
    """The column type auto.create and auto.evolve give a field."""
    return _COLUMN_TYPES.get((schema.type, schema.name), Text)()


def fits(column: Column[Any], value: object) -> object:
    """The value as the column takes it, or TypeError: SQLite stores anything in any column,
    so the sink checks types itself (a Timestamp given as milliseconds becomes a datetime)."""
    if value is None:
        return None
    if isinstance(column.type, DateTime) and isinstance(value, int) and not isinstance(value, bool):
        value = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=value)
    if isinstance(value, datetime) and isinstance(column.type, DateTime):
        return value if column.type.timezone else _naive_utc(value)
    expected = _python_type(column.type)
    if expected is None or isinstance(value, expected) and not (isinstance(value, bool) and expected is int):
        return value
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(column.type, Numeric) and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise TypeError(f"{type(value).__name__} {value!r} does not fit column {column.name} {column.type}")


def row_fits(table: Table, row: Mapping[str, object], complete: bool = True) -> dict[str, object]:
    """The row as its table takes it; TypeError naming what does not fit. A `complete` row
    (an insert's) needs a value for every NOT NULL column; an update's only for those it sets."""
    columns = table.c
    needed = list(columns) if complete else [columns[name] for name in row]
    missing = [c.name for c in needed if row.get(c.name) is None and _needs_value(c)]
    if missing:
        raise TypeError(f"no value for the non-null column(s) {', '.join(missing)}")
    return {name: fits(columns[name], value) for name, value in row.items()}


def _needs_value(column: Column[Any]) -> bool:
    """A NOT NULL column the database does not fill itself (a default, an autoincrement key)."""
    generated = column.server_default is not None or column.table.autoincrement_column is column
    return not column.nullable and not generated


def _python_type(kind: TypeEngine[Any]) -> type | None:
    try:
        return kind.python_type
    except NotImplementedError:
        return None


def _naive_utc(moment: datetime) -> datetime:
    return utc(moment).replace(tzinfo=None)
