"""Kafka Connect's converters: for the FileStream connectors, whose records have no key and a
STRING value, a line becomes a record's bytes (source) and a record's bytes become a line
(sink); for the JDBC connectors, a value with a Connect schema (a row's struct, a primary key)
becomes bytes and back. `key.converter` / `value.converter` take Kafka's class names; their own
settings are the connector's `value.converter.<name>` keys (`schemas.enable`), falling back on
the worker's.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
CONVERTERS = (STRING_CONVERTER, JSON_CONVERTER)
_STRING_SCHEMA = {"type": "string", "optional": False}
ENVELOPE_REQUIRED = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
    "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false "
    "in your converter configuration."
)


TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"  # int64 milliseconds since the epoch
DATE = "org.apache.kafka.connect.data.Date"  # int32 days since the epoch
TIME = "org.apache.kafka.connect.data.Time"  # int32 milliseconds since midnight
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ConversionError(ValueError):
    """A record the converter cannot read (Connect's DataException)."""

    connect_class = "org.apache.kafka.connect.errors.DataException"  # as dead letters name it


@dataclass(frozen=True)
class Schema:
    """A Connect schema: a primitive type (int8..int64, float, double, boolean, string, bytes),
    maybe with a logical `name` (Timestamp, Date, Time), or a struct of named fields."""

    type: str
    optional: bool = False
    name: str | None = None
    fields: tuple[tuple[str, Schema], ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        """The schema as JsonConverter writes it in an envelope."""
        found: dict[str, object] = {"type": self.type}
        if self.type == "struct":
            found["fields"] = [{**schema.to_json(), "field": name} for name, schema in self.fields]
        found["optional"] = self.optional
        if self.name:
            found["name"] = self.name
            if self.name in (TIMESTAMP, DATE, TIME):
                found["version"] = 1
        return found

    @classmethod
    def from_json(cls, document: Mapping[str, object]) -> Schema:
        fields = document.get("fields") or []
        assert isinstance(fields, list)
        return cls(
            str(document["type"]),
            bool(document.get("optional", False)),
            str(document["name"]) if document.get("name") else None,
            tuple((str(f["field"]), cls.from_json(f)) for f in fields),
        )


@dataclass(frozen=True)
class Data:
    """A record's key or value as a converter reads it: its schema (None for schemaless JSON)
    and its value in Python terms (datetime for a Timestamp, bytes for bytes, dict for a struct)."""

    schema: Schema | None
    value: object


@dataclass(frozen=True)
class Converter:
    """A converter as configured: its class and, for JsonConverter, schemas.enable."""

    class_name: str = JSON_CONVERTER
    schemas_enable: bool = True

    def from_line(self, line: str) -> bytes:
        """The bytes of a STRING value (a source record's)."""
        if self.class_name == STRING_CONVERTER:
            return line.encode()
        value: object = {"schema": _STRING_SCHEMA, "payload": line} if self.schemas_enable else line
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    def to_line(self, data: bytes | None) -> str:
        """A record's value as the sink writes it: a string as it is, other JSON as JSON
        (Kafka's FileStreamSink writes Java's toString of the value instead)."""
        if data is None:
            return "null"
        if self.class_name == STRING_CONVERTER:
            return data.decode(errors="replace")
        try:
            value = json.loads(data)
        except ValueError as exc:
            raise ConversionError(
                f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
            ) from None
        if self.schemas_enable:
            if not isinstance(value, dict) or set(value) != {"schema", "payload"}:
                raise ConversionError(ENVELOPE_REQUIRED)
            value = value["payload"]
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))

    def from_data(self, schema: Schema, value: object) -> bytes:
        """The bytes of a value with a schema (a source record's key or value)."""
        if self.class_name == STRING_CONVERTER:
            return _connect_string(schema, value).encode()
        payload = _to_json(schema, value)
        document = {"schema": schema.to_json(), "payload": payload} if self.schemas_enable else payload
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()

    def to_data(self, data: bytes) -> Data:
        """A record's key or value (not a tombstone's null) with its schema, when it has one."""
        if self.class_name == STRING_CONVERTER:
            return Data(Schema("string", optional=True), data.decode(errors="replace"))
        try:
            document = json.loads(data)
        except ValueError as exc:
            raise ConversionError(
                f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
            ) from None
        if not self.schemas_enable:
            return Data(None, document)
        if not isinstance(document, dict) or set(document) != {"schema", "payload"}:
            raise ConversionError(ENVELOPE_REQUIRED)
        if document["schema"] is None:
            return Data(None, document["payload"])
        schema = Schema.from_json(document["schema"])
        return Data(schema, _from_json(schema, document["payload"]))


def _to_json(schema: Schema, value: object) -> object:
    """A Python value as JsonConverter writes it for its schema."""
    if value is None:
        return None
    if schema.type == "struct":
        assert isinstance(value, Mapping)
        return {name: _to_json(child, value.get(name)) for name, child in schema.fields}
    if schema.name == TIMESTAMP and isinstance(value, datetime):
        return (utc(value) - _EPOCH) // timedelta(milliseconds=1)
    if schema.name == DATE and isinstance(value, date):
        return (value - _EPOCH.date()).days
    if schema.name == TIME and isinstance(value, time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if schema.type == "bytes" and isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if schema.type in ("float", "double"):
        return float(value)  # type: ignore[arg-type]  # a column's number (Decimal, int)
    return value


def _from_json(schema: Schema, value: object) -> object:
    """A JSON payload's value in Python terms, for its schema."""
    if value is None:
        return None
    if schema.type == "struct" and isinstance(value, dict):
        return {name: _from_json(child, value.get(name)) for name, child in schema.fields}
    if schema.name == TIMESTAMP and isinstance(value, int):
        return _EPOCH + timedelta(milliseconds=value)
    if schema.name == DATE and isinstance(value, int):
        return _EPOCH.date() + timedelta(days=value)
    if schema.name == TIME and isinstance(value, int):
        return (datetime.min + timedelta(milliseconds=value)).time()
    if schema.type == "bytes" and isinstance(value, str):
        return base64.b64decode(value)
    return value


def _connect_string(schema: Schema, value: object) -> str:
    """StringConverter's text: Java's toString, `Struct{id=1,name=a}` for a struct (nulls left out)."""
    if schema.type == "struct" and isinstance(value, Mapping):
        shown = [
            f"{name}={_connect_string(child, value[name])}"
            for name, child in schema.fields
            if value.get(name) is not None
        ]
        return "Struct{" + ",".join(shown) + "}"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def utc(moment: datetime) -> datetime:
    """A database's timestamp as UTC: one without a zone is taken to be UTC (Confluent's db.timezone)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def converter(side: str, connector: Mapping[str, str], worker: Mapping[str, str]) -> Converter:
    """The `side` ("key" or "value") converter of a connector: its own setting, else the worker's."""
    prefix = f"{side}.converter"
    own = prefix in connector
    settings = connector if own else worker
    class_name = settings.get(prefix) or JSON_CONVERTER
    enabled = settings.get(f"{prefix}.schemas.enable", "true").strip().lower() != "false"
    return Converter(class_name, enabled)


def unknown(class_name: str) -> str | None:
    """Kafka's refusal of a converter class it cannot load, or None for a known one."""
    return None if class_name in CONVERTERS else f"Class {class_name} could not be found."
