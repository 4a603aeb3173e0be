"""The embedded formats: how a key or value written in a request's JSON becomes a record's
bytes, as Confluent's proxy makes them. BINARY is base64 text, JSON is the value's compact JSON
text, STRING (v3) its UTF-8; AVRO, JSONSCHEMA and PROTOBUF are encoded with a registered
schema in Confluent's wire format, as their serializers write them. A value the format cannot
take is the whole request's error (422 with Confluent's code), found before anything is sent.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from dataclasses import dataclass
from typing import Any

from restproxy import errors
from restproxy.errors import RestError
from schemaregistry.serde import Encoder

MAX_RECORD_BYTES = 1_000_000  # librdkafka's message.max.bytes: no larger record can be produced
MAX_BASE64_CHARS = 4 * -(-MAX_RECORD_BYTES // 3)  # checked before decoding anything


class Format(enum.Enum):
    BINARY = "BINARY"
    JSON = "JSON"
    STRING = "STRING"
    AVRO = "AVRO"
    JSONSCHEMA = "JSONSCHEMA"
    PROTOBUF = "PROTOBUF"

    @property
    def schema_type(self) -> str | None:
        """The registry's name of the format's schema type; None for a format without schemas."""
        return _SCHEMA_TYPES.get(self)

    @staticmethod
    def of_schema_type(schema_type: str) -> Format:
        return next(fmt for fmt, name in _SCHEMA_TYPES.items() if name == schema_type)


_SCHEMA_TYPES = {Format.AVRO: "AVRO", Format.JSONSCHEMA: "JSON", Format.PROTOBUF: "PROTOBUF"}


@dataclass(frozen=True)
class Schema:
    """A registered schema, ready to encode records: its id, the subject it was found under
    (when the request named or implied one) and its format."""

    schema_id: int
    format: Format
    encoder: Encoder
    subject: str | None = None
    version: int | None = None


def to_bytes(fmt: Format, data: Any, schema: Schema | None) -> bytes | None:
    """The record bytes of a key's or value's data (None stays None: no key, a tombstone).
    A schema format needs `schema` (the caller says 42201/42202 when there is none)."""
    if data is None:
        return None
    if fmt is Format.BINARY:
        return _base64(data)
    if fmt is Format.JSON:
        return json_bytes(data)
    if fmt is Format.STRING:
        return _string(data)
    if schema is None:
        raise errors.invalid_schema(f"the {fmt.value} format needs a schema")
    return _encoded(schema, data)


def json_bytes(data: Any) -> bytes:
    """Compact JSON text, as Jackson writes it (KafkaJsonSerializer)."""
    try:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except ValueError as exc:
        raise errors.json_conversion(str(exc)) from None


def _base64(data: Any) -> bytes:
    if not isinstance(data, str):
        raise errors.serialization(f"data={_shown(data)} is not a base64 string.")
    if len(data) > MAX_BASE64_CHARS:
        raise record_too_large(f"{len(data)} characters of base64")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise errors.serialization(f"data={_shown(data)} is not a base64 string: {exc}.") from None


def _string(data: Any) -> bytes:
    if not isinstance(data, str):
        raise errors.json_conversion(f"data={_shown(data)} is not a string, as type STRING needs.")
    try:
        return data.encode()
    except UnicodeEncodeError as exc:  # a lone surrogate ("\\ud800") is no UTF-8
        raise errors.json_conversion(str(exc)) from None


def _encoded(schema: Schema, data: Any) -> bytes:
    try:
        return schema.encoder.encode(data)
    except (ValueError, TypeError, OverflowError) as exc:  # RecordDoesNotFit is a ValueError
        raise errors.json_conversion(f"{exc} (schema {schema.schema_id})") from None


def record_too_large(what: str) -> RestError:
    return RestError(
        422, 42207, f"Error serializing message. {what} make a record larger than {MAX_RECORD_BYTES} bytes."
    )


def _shown(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
