"""Kafka Connect's converters for the FileStream connectors, whose records have no key and a
STRING value: a line becomes a record's bytes (source) and a record's bytes become a line
(sink). `key.converter` / `value.converter` take Kafka's class names; their own settings are
the connector's `value.converter.<name>` keys (`schemas.enable`), falling back on the worker's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
CONVERTERS = (STRING_CONVERTER, JSON_CONVERTER)
_STRING_SCHEMA = {"type": "string", "optional": False}
ENVELOPE_REQUIRED = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
    "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false "
    "in your converter configuration."
)


class ConversionError(ValueError):
    """A record the converter cannot read (Connect's DataException)."""

    connect_class = "org.apache.kafka.connect.errors.DataException"  # as dead letters name it


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
