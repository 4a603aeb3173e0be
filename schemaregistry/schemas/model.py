"""What every schema type shares: the parsed schema, the error a bad schema raises, one
incompatibility as Confluent words it, and the bounds that keep hostile schemas cheap."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# A registry answers any client: a schema bigger or deeper than this is refused before any
# library recurses into it (RecursionError) or a checker walks it for long.
MAX_SCHEMA_CHARS = 1 << 20
MAX_DEPTH = 64
# Comparisons one compatibility check may make: Avro checks every writer union branch against
# every reader branch, JSON Schema every pair of subschemas of two combined schemas, so nested
# unions multiply. Past this (a second or so) the pair is reported incompatible (TooComplex).
MAX_COMPARISONS = 100_000


class InvalidSchema(ValueError):
    """The schema cannot be registered; the message is the one-line reason (the caller wraps it
    in Confluent's 42201 'Invalid schema ..., details: <reason>')."""


class TooComplex(Exception):
    """A compatibility check met more nesting or work than MAX_DEPTH/its budget allow; the
    pair is reported incompatible instead of letting the check recurse or run for long."""


@dataclass(frozen=True)
class ParsedSchema:
    """A schema that parsed, with its references resolved.

    `parsed` is what encoding and decoding use: for AVRO an `AvroParsed` (fastavro's parsed
    schema and Avro's Schema object), for JSON a `JsonParsed` (the document and a validator
    that resolves its references), for PROTOBUF a `ProtobufParsed` (the FileDescriptorSet).
    Equality and hashing look at the type and the texts only."""

    schema_type: str
    text: str
    canonical: str
    parsed: Any = field(compare=False, repr=False)


@dataclass(frozen=True)
class Incompatibility:
    """One difference that breaks compatibility. `description` is a str.format template whose
    {reader} and {writer} are filled in by the direction of the check ('new'/'old', as
    Confluent's SchemaValidatorBuilder does) and whose other fields come from `details`, so
    names taken from a schema are never read as template syntax."""

    error_type: str
    description: str
    details: Mapping[str, str] = field(default_factory=dict)
    additional_info: str | None = None  # Avro's messages carry the checker's own detail

    def render(self, reader: str, writer: str) -> str:
        text = self.description.format(reader=reader, writer=writer, **self.details)
        if self.additional_info is None:  # JSON Schema and Protobuf: Difference.toString()
            return f'{{errorType:"{self.error_type}", description:"{text}"}}'
        info = self.additional_info
        return f"{{errorType:'{self.error_type}', description:'{text}', additionalInfo:'{info}'}}"


def check_size(text: str) -> None:
    if not text.strip():
        raise InvalidSchema("Empty schema")
    if len(text) > MAX_SCHEMA_CHARS:
        raise InvalidSchema(
            f"the schema has {len(text)} characters, more than the {MAX_SCHEMA_CHARS} allowed"
        )


def load_json(text: str, what: str) -> Any:
    """The JSON document in `text`; its nesting is checked too, so nothing later recurses
    deeper than MAX_DEPTH."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidSchema(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidSchema(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    check_json_depth(document, what)
    return document


def check_json_depth(document: object, what: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH, walking it without recursion."""
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise InvalidSchema(f"{what} is nested deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)
