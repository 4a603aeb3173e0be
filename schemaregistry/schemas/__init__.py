"""Schemas of the three types Confluent Schema Registry keeps (Avro, Protobuf, JSON Schema):
parsing and validating them, with their references resolved, and checking a new version's
compatibility with earlier ones as Confluent does, in Confluent's words.

Modules: `model` (ParsedSchema, InvalidSchema, bounds), one parser per type (`avro`,
`json_schema`, `protobuf`), one compatibility checker per type (`avro_compat`, `json_compat`
with `json_model` and `json_diff`, `protobuf_compat`) and `compatibility`, which applies the
levels."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from schemaregistry.schemas import avro, json_schema, protobuf
from schemaregistry.schemas.compatibility import COMPATIBILITY_LEVELS, compatibility_messages
from schemaregistry.schemas.model import InvalidSchema, ParsedSchema, check_size
from schemaregistry.schemas.protobuf import file_descriptor_set, serialized

__all__ = [
    "COMPATIBILITY_LEVELS",
    "SCHEMA_TYPES",
    "InvalidSchema",
    "ParsedSchema",
    "compatibility_messages",
    "file_descriptor_set",
    "parse",
    "serialized",
]

SCHEMA_TYPES: tuple[str, ...] = ("JSON", "PROTOBUF", "AVRO")  # the order GET /schemas/types answers
NO_REFERENCES: Mapping[str, str] = MappingProxyType({})
PARSERS: dict[str, Callable[[str, Mapping[str, str]], ParsedSchema]] = {
    "AVRO": avro.parse,
    "JSON": json_schema.parse,
    "PROTOBUF": protobuf.parse,
}


def parse(schema_type: str, text: str, references: Mapping[str, str] = NO_REFERENCES) -> ParsedSchema:
    """The schema `text` of `schema_type`, whose references are given as reference name ->
    text, all of them (transitively), dependencies first: for Avro the name does not matter
    (every referenced schema's named types are defined), for Protobuf it is the import path,
    for JSON Schema the URI a `$ref` names. Raises InvalidSchema."""
    if schema_type not in PARSERS:
        raise InvalidSchema(f"unknown schema type {schema_type!r}; the types are {', '.join(SCHEMA_TYPES)}")
    check_size(text)
    return PARSERS[schema_type](text, references)
