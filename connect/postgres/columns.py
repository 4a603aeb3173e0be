"""PostgreSQL columns as Connect schemas and values, as Debezium's defaults give them
(`time.precision.mode=adaptive`, `decimal.handling.mode` as `double` here): integers by size,
real and double precision `float` / `double`, numeric `double`, boolean, bytea `bytes`,
timestamp `io.debezium.time.MicroTimestamp` (microseconds since the epoch), timestamptz
`io.debezium.time.ZonedTimestamp` (ISO-8601 in UTC), date `io.debezium.time.Date` (days since
the epoch), anything else a string. A value comes either from wal2json (JSON numbers and
booleans, text otherwise, bytea as hex) or from a snapshot's `column::text`."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from connect.converters import Schema
from connect.postgres.wal2json import Column

MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
DATE = "io.debezium.time.Date"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TYPES: dict[str, tuple[str, str | None]] = {
    "smallint": ("int16", None),
    "integer": ("int32", None),
    "bigint": ("int64", None),
    "real": ("float", None),
    "double precision": ("double", None),
    "numeric": ("double", None),
    "boolean": ("boolean", None),
    "bytea": ("bytes", None),
    "timestamp without time zone": ("int64", MICRO_TIMESTAMP),
    "timestamp with time zone": ("string", ZONED_TIMESTAMP),
    "date": ("int32", DATE),
}


def schema(column: Column) -> Schema:
    kind, name = _TYPES.get(_base_type(column.type), ("string", None))
    return Schema(kind, column.optional, name)


def value(column: Column) -> object:
    """The column's value in the Python terms Connect's converters write for its schema."""
    found = column.value
    if found is None:
        return None
    kind, name = _TYPES.get(_base_type(column.type), ("string", None))
    text = str(found)
    if kind.startswith("int") and name is None:
        return int(text)
    if kind in ("float", "double"):
        return float(text)
    if kind == "boolean":
        return found if isinstance(found, bool) else text in ("t", "true")
    if kind == "bytes":
        return bytes.fromhex(text.removeprefix("\\x"))
    if name == MICRO_TIMESTAMP:
        moment = datetime.fromisoformat(text).replace(tzinfo=UTC)
        return (moment - _EPOCH) // timedelta(microseconds=1)
    if name == ZONED_TIMESTAMP:
        return datetime.fromisoformat(text).astimezone(UTC).isoformat().replace("+00:00", "Z")
    if name == DATE:
        return (date.fromisoformat(text) - _EPOCH.date()).days
    return text


def _base_type(name: str) -> str:
    """`numeric(10,2)` as `numeric`, `timestamp(3) without time zone` as `timestamp without time zone`."""
    if "(" not in name:
        return name
    head, _, rest = name.partition("(")
    return (head + rest.partition(")")[2]).strip()
