"""Fetched records in the shape v2's `GET .../records` answers with, for a consumer instance's
embedded format: `binary` as base64, `json` as the JSON value the bytes hold, `avro`,
`jsonschema` and `protobuf` decoded through the schema registry to JSON (what Confluent's
deserializers and JSON converters give). Keys and values follow the same format, as they do
in Confluent's proxy; a null stays null.

A record that does not decode is `Undecodable`: the instance leaves it at the head of what
it has fetched, so the client sees the records before it, then an error naming it, and can
seek past it; nothing is skipped without the client knowing."""

from __future__ import annotations

import base64
import json
import math
import threading
from typing import Any

from confluent_kafka import Message

from schemaregistry.client import RegistryClient, RegistryClientError, RegistryUnreachable
from schemaregistry.serde import decode
from schemaregistry.wire import BadPayload, unframe

FORMATS = ("binary", "json", "avro", "jsonschema", "protobuf")
SCHEMA_TYPES = {"avro": "AVRO", "jsonschema": "JSON", "protobuf": "PROTOBUF"}  # the registry's names
# What Jackson writes for floats JSON has no number for (Avro and Protobuf doubles can hold them).
NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
# schemaregistry.serde's codec cache is kctl's, made for one thread; instances decode on many
_DECODING = threading.Lock()


class Undecodable(Exception):
    """A record's key or value is not of the instance's format (or its schema is unknown)."""


class RecordDecoder:
    """Turns fetched messages into v2 records for one embedded format; the schema formats read
    their schemas from the registry (cached by id in the client, shared by every instance)."""

    def __init__(self, embedded_format: str, registry: RegistryClient | None) -> None:
        if embedded_format in SCHEMA_TYPES and registry is None:
            raise ValueError(f"the {embedded_format} format needs a schema registry")
        self.format = embedded_format
        self._registry = registry

    def record(self, message: Message) -> tuple[dict[str, Any], int]:
        """(the v2 record, its size as max_bytes counts it: the key's and value's bytes)."""
        key, value = message.key(), message.value()
        where = f"{message.topic()}-{message.partition()}@{message.offset()}"
        record = {
            "topic": message.topic(),
            "key": self._field(key, where, "key"),
            "value": self._field(value, where, "value"),
            "partition": message.partition(),
            "offset": message.offset(),
        }
        return record, len(key or b"") + len(value or b"")

    def _field(self, data: bytes | None, where: str, which: str) -> Any:
        if data is None:
            return None
        try:
            return self._decoded(data)
        except (BadPayload, ValueError, RecursionError) as error:
            raise Undecodable(f"the {which} of {where} is not {self.format}: {error}") from None

    def _decoded(self, data: bytes) -> Any:
        if self.format == "binary":
            return base64.b64encode(data).decode()
        if self.format == "json":  # NaN and Infinity stay the strings they were, as Jackson writes them
            return json.loads(data, parse_constant=str)
        return _finite(self._schema_decoded(data))

    def _schema_decoded(self, data: bytes) -> Any:
        assert self._registry is not None  # checked when the decoder was made
        protobuf = self.format == "protobuf"
        schema_id, indexes, body = unframe(data, protobuf=protobuf)
        try:
            schema = self._registry.parsed_schema_by_id(schema_id)
        except RegistryUnreachable:
            raise
        except RegistryClientError as error:
            raise BadPayload(f"schema {schema_id}: {error}") from None
        if schema.schema_type != SCHEMA_TYPES[self.format]:
            raise BadPayload(f"schema {schema_id} is {schema.schema_type}")
        with _DECODING:
            return decode(schema, indexes, body)


def _finite(value: Any) -> Any:
    """The value with its non-finite floats as Jackson's strings, so it can be sent as JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE.get(value, "NaN")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
