"""Avro bodies for one schema, with fastavro: JSON values checked and prepared by the checks
compiled from the schema (avro_checks) on the way in, fastavro's values made JSON-able on the
way out."""

import io
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from schemaregistry.serde.avro_checks import AvroChecks
from schemaregistry.serde.errors import TOO_DEEP, Misfit, RecordDoesNotFit
from schemaregistry.wire import BadPayload

# what fastavro raises reading bytes that are not of the schema: cut short, a string or a
# count running past the end, an enum or union index out of range, nesting without end
_AVRO_READ_ERRORS = (EOFError, ValueError, TypeError, IndexError, OverflowError, MemoryError, RecursionError)


class AvroCodec:
    """Avro bodies for one schema, with fastavro.

    Input is plain JSON, as confluent-kafka's AvroSerializer takes dicts: a union's value is
    given as is (not Avro JSON's {"type": value}) and goes to the first branch that takes it
    exactly, else to the first that takes it at all; bytes and fixed are strings of
    characters U+0000-U+00FF, one per byte (Avro's JSON convention), or bytes; decimals are
    numbers or numeric strings; other logical types are given as their underlying type
    (timestamp-millis as a long, uuid as a string). Fields not in the schema are refused
    rather than dropped, so a misspelt field is not silently replaced by its default.

    Output keeps the schema's field order; bytes and fixed come back as latin-1 strings (the
    same convention, so a decoded record encodes again unchanged), decimals as strings of
    the number ("12.30", exact, unlike a float), other logical types as their underlying
    value, which is how Avro's JSON encoding shows them.
    """

    def __init__(self, schema: Any, named_schemas: Mapping[str, Any]) -> None:
        """`schema` is fastavro's parsed schema and `named_schemas` every named type it may
        use, the referenced schemas' included (what schemas.avro.AvroParsed holds)."""
        import fastavro

        self._write = fastavro.schemaless_writer
        self._read = fastavro.schemaless_reader
        self._writer = schema
        # logical types change nothing on the wire: reading without them (but decimal) gives
        # JSON-able values instead of datetimes and UUIDs, and a malformed uuid string
        # written by someone else still reads
        self._reader = _without_logical_types(schema)
        checks = AvroChecks(named_schemas)
        self._check = checks.compile(schema)
        self._has_bytes = checks.has_bytes

    def encode(self, value: Any) -> bytes:
        """The Avro binary encoding of `value`; RecordDoesNotFit when the schema cannot hold it."""
        try:
            prepared = self._check(value)
        except Misfit as misfit:
            raise misfit.does_not_fit() from None
        except RecursionError:
            raise RecordDoesNotFit("/", TOO_DEEP) from None
        out = io.BytesIO()
        try:
            self._write(out, self._writer, prepared)
        except (ValueError, TypeError, OverflowError, RecursionError) as error:  # unforeseen by the checks
            raise RecordDoesNotFit("/", str(error)) from None
        return out.getvalue()

    def decode(self, body: bytes) -> Any:
        try:
            value = self._read(io.BytesIO(body), self._reader, None)
            return _avro_jsonable(value) if self._has_bytes else value
        except _AVRO_READ_ERRORS as error:
            raise BadPayload(f"not Avro of this schema: {error or type(error).__name__}") from None


def _without_logical_types(schema: Any) -> Any:
    """A copy of a parsed schema (its named types included) without logicalType attributes,
    but decimal's."""
    if isinstance(schema, list):
        return [_without_logical_types(item) for item in schema]
    if isinstance(schema, dict):
        return {
            key: _without_logical_types(value)
            for key, value in schema.items()
            if not (key == "logicalType" and value != "decimal")
        }
    return schema


def _avro_jsonable(value: Any) -> Any:
    """fastavro's bytes and Decimals made JSON-able; only for schemas that have any."""
    if type(value) is dict:
        return {key: _avro_jsonable(item) for key, item in value.items()}
    if type(value) is list:
        return [_avro_jsonable(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, Decimal):
        return format(value, "f")  # str() would give 0E-8 for 0.00000000
    return value
