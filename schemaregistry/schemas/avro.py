"""Avro schemas: read by fastavro (what records are encoded and decoded with) and by Apache
Avro's Python library, whose Schema objects the compatibility checker walks and which refuses
what Java's Avro parser refuses and fastavro lets through (bad names, duplicate fields or union
branches, a fixed without a size)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import avro.errors
import avro.name
import avro.schema
import fastavro
from fastavro.schema import UnknownType

from schemaregistry.schemas.model import InvalidSchema, ParsedSchema, load_json


@dataclass(frozen=True)
class AvroParsed:
    """`fastavro` is fastavro's parsed schema; `named_schemas` holds every named type it may
    refer to, those of the references included (fastavro's readers and writers take it);
    `schema` is the same schema as an avro.schema.Schema."""

    fastavro: Any
    named_schemas: dict[str, Any]
    schema: avro.schema.Schema


def parse(text: str, references: Mapping[str, str]) -> ParsedSchema:
    """A reference's name does not matter to Avro (Confluent parses every referenced schema
    first, so that their named types are defined): only their texts are read."""
    document = load_json(text, "the schema")
    documents = {name: load_json(ref, f"reference '{name}'") for name, ref in references.items()}
    named, order = _define_references(documents)
    try:
        parsed = fastavro.parse_schema(document, named_schemas=named)
    except Exception as exc:  # fastavro reports a bad schema with whatever it tripped on
        raise InvalidSchema(_reason(exc)) from None
    names = avro.name.Names()
    for name in order:
        _avro_schema(documents[name], names, f"reference '{name}': ")
    schema = _avro_schema(document, names, "")
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return ParsedSchema("AVRO", text, canonical, AvroParsed(parsed, named, schema))


def _define_references(documents: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The named types the references define, and an order that defines each before its use.
    Callers give references dependencies first, so one pass is the rule; a reference that
    uses a type another defines later waits for the next pass."""
    named: dict[str, Any] = {}
    order: list[str] = []
    pending = list(documents)
    while pending:
        waiting: list[str] = []
        unknown = ""
        for name in pending:
            attempt = dict(named)
            try:
                fastavro.parse_schema(documents[name], named_schemas=attempt)
            except UnknownType as exc:
                waiting.append(name)
                unknown = f"reference '{name}': {_reason(exc)}"
                continue
            except Exception as exc:
                raise InvalidSchema(f"reference '{name}': {_reason(exc)}") from None
            named = attempt
            order.append(name)
        if len(waiting) == len(pending):
            raise InvalidSchema(unknown)
        pending = waiting
    return named, order


def _avro_schema(document: Any, names: avro.name.Names, where: str) -> avro.schema.Schema:
    try:
        return avro.schema.make_avsc_object(document, names)
    except (avro.errors.AvroException, TypeError, ValueError, AttributeError, KeyError) as exc:
        raise InvalidSchema(f"{where}{_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnknownType):
        return f"unknown type: {exc.name}"
    if isinstance(exc, KeyError):
        return f"missing attribute {exc}"
    return str(exc) or type(exc).__name__
