"""JSON Schema payloads: JSON values checked and shaped as the reader's Spark type.

Objects' properties by name (missing ones null, others ignored), strings as they are and
other values in a string column as their JSON text; a value of another type is a Mismatch
naming its path, and the payload a BadPayload (kctl.spark.decoding).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructType,
)

from schemaregistry.wire import BadPayload

Convert = Callable[[Any], Any]


class Mismatch(ValueError):
    """A JSON value not of the reader's type; the path to it is collected on the way up."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []

    def at(self, key: str) -> Mismatch:
        self.path.append(key)
        return self

    def __str__(self) -> str:
        return f"field /{'/'.join(reversed(self.path))}: {self.reason}"


def json_decoder(reader: DataType) -> Convert:
    conform = json_conformer(reader)

    def decode(payload: bytes) -> Any:
        try:
            return conform(json.loads(payload[5:]))
        except (Mismatch, ValueError, RecursionError) as error:
            raise BadPayload(str(error)) from None

    return decode


def json_conformer(reader: DataType) -> Convert:
    """A JSON value checked and shaped as the reader's type: objects' properties by name
    (missing ones null, others ignored), strings as they are and other values in a string
    column as their JSON text; a value of another type is a Mismatch naming its path."""
    if isinstance(reader, StructType):
        return _json_struct(reader)
    if isinstance(reader, ArrayType):
        return _json_array(json_conformer(reader.elementType))
    if isinstance(reader, MapType):
        return _json_map(json_conformer(reader.valueType))
    return _JSON_SCALARS.get(type(reader), _json_null)


def _json_struct(reader: StructType) -> Convert:
    fields = [(field.name, json_conformer(field.dataType)) for field in reader.fields]
    return _container(
        dict, "an object", lambda value: {name: _at(name, inner, value.get(name)) for name, inner in fields}
    )


def _json_array(element: Convert) -> Convert:
    return _container(
        list, "an array", lambda value: [_at(str(index), element, item) for index, item in enumerate(value)]
    )


def _json_map(entry: Convert) -> Convert:
    return _container(
        dict, "an object", lambda value: {key: _at(key, entry, item) for key, item in value.items()}
    )


def _container(kind: type, what: str, shape: Convert) -> Convert:
    """Null as it is; a JSON value of ``kind`` shaped item by item; anything else a Mismatch."""

    def conform(value: Any) -> Any:
        if value is None:
            return None
        if type(value) is not kind:
            raise Mismatch(f"expected {what}, got {_json_kind(value)}")
        return shape(value)

    return conform


def _at(key: str, conform: Convert, value: Any) -> Any:
    """``value`` conformed; a Mismatch inside it learns that it lies under ``key``."""
    try:
        return conform(value)
    except Mismatch as mismatch:
        raise mismatch.at(key) from None


def _json_kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _json_long(value: Any) -> Any:
    if value is None:
        return None
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise Mismatch(f"expected an integer, got {_json_kind(value)}")
    if not -(2**63) <= value < 2**63:
        raise Mismatch(f"{value} is out of range for a bigint")
    return value


def _json_double(value: Any) -> Any:
    if value is None:
        return None
    if type(value) not in (int, float):
        raise Mismatch(f"expected a number, got {_json_kind(value)}")
    try:
        return float(value)
    except OverflowError:
        raise Mismatch(f"{value} is out of range for a double") from None


def _json_boolean(value: Any) -> Any:
    if value is not None and type(value) is not bool:
        raise Mismatch(f"expected a boolean, got {_json_kind(value)}")
    return value


def _json_string(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_null(value: Any) -> Any:
    return None


_JSON_SCALARS: dict[type, Convert] = {
    LongType: _json_long,
    DoubleType: _json_double,
    BooleanType: _json_boolean,
    StringType: _json_string,
    NullType: _json_null,
}
