"""Avro and Protobuf payloads read with their writer schema into the reader's Spark type.

Avro by Avro's schema resolution (fastavro: fields added with defaults, removed, promoted),
then shaped as the Spark type holds it (`AvroShapes`: a union of several types as a struct
of member0, member1...). Protobuf field by field, by name (`ProtobufDecoder`): the payload's
message must be the reader's, and a field of another type than the reader's is Incompatible.
The decoders raise BadPayload for bytes that do not decode (kctl.spark.decoding).
"""

from __future__ import annotations

import datetime
import decimal
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import ArrayType, DataType, DecimalType, MapType, StructType

from kctl.spark.schematypes import (
    AVRO_NARROWED_UNIONS,
    TIMESTAMP_MESSAGE,
    avro_branches,
    avro_kind,
    protobuf_single_type,
)
from schemaregistry.wire import BadPayload

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]

    from schemaregistry.schemas import ParsedSchema

Convert = Callable[[Any], Any]
# logical types read as their underlying type, as spark-avro reads them (time-* as int/bigint,
# uuid as string); the others fastavro reads into what the Spark type holds
_AVRO_RAW_LOGICAL = frozenset({"time-millis", "time-micros", "uuid"})


class Incompatible(ValueError):
    """A writer's message the reader's type cannot hold: another message than the reader's,
    or a field of another type than the reader's field of that name."""


# --- Avro -----------------------------------------------------------------------------------------


def avro_decoder(writer: ParsedSchema, reader: ParsedSchema) -> Convert:
    """Avro bodies of `writer` read into `reader` (Avro's schema resolution: fields added
    with defaults, removed, promoted), then shaped as the reader's Spark type."""
    import fastavro
    from fastavro.read import SchemaResolutionError

    writer_schema = _raw_logical(writer.parsed.fastavro)
    reader_schema = None if writer is reader else _raw_logical(reader.parsed.fastavro)
    shape = AvroShapes(reader.parsed.named_schemas).compile(reader.parsed.fastavro)
    read = fastavro.schemaless_reader
    # what fastavro raises on bytes that are not of the writer's schema, or do not resolve
    errors = (
        SchemaResolutionError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        OverflowError,
        MemoryError,
        RecursionError,
    )

    def decode(payload: bytes) -> Any:
        try:
            value = read(
                io.BytesIO(payload[5:]),
                writer_schema,
                reader_schema,
                return_named_type=True,
                return_named_type_override=True,
            )
        except errors as error:
            raise BadPayload(str(error) or type(error).__name__) from None
        return value if shape is None else shape(value)

    return decode


def _raw_logical(schema: Any) -> Any:
    """A copy of a fastavro-parsed schema without the logical types read as their underlying type."""
    if isinstance(schema, list):
        return [_raw_logical(item) for item in schema]
    if isinstance(schema, dict):
        return {
            key: _raw_logical(value)
            for key, value in schema.items()
            if not (key == "logicalType" and value in _AVRO_RAW_LOGICAL)
        }
    return schema


class AvroShapes:
    """What fastavro reads, made what the Spark type holds. Only unions of several types need
    it (a struct of member0, member1...); for the rest `compile` gives None: as read."""

    def __init__(self, named: dict[str, Any]) -> None:
        self._named = named

    def compile(self, schema: Any) -> Convert | None:
        if isinstance(schema, list):
            return self._union(schema)
        if isinstance(schema, str):
            return None if schema not in self._named else self.compile(self._named[schema])
        kind = schema["type"]
        if kind in ("record", "error"):
            return self._record(schema["fields"])
        if kind == "array":
            item = self.compile(schema["items"])
            return None if item is None else lambda value: [item(x) for x in value]
        if kind == "map":
            entry = self.compile(schema["values"])
            return None if entry is None else lambda value: {k: entry(x) for k, x in value.items()}
        return self.compile(kind)  # enum, fixed, a primitive with a logical type: as read

    def _record(self, fields: list[dict[str, Any]]) -> Convert | None:
        shapes = [(field["name"], self.compile(field["type"])) for field in fields]
        needed = [(name, shape) for name, shape in shapes if shape is not None]
        if not needed:
            return None

        def shape(value: dict[str, Any]) -> dict[str, Any]:
            return {**value, **{name: convert(value[name]) for name, convert in needed}}

        return shape

    def _union(self, branches: list[Any]) -> Convert | None:
        others = avro_branches(branches)
        kinds = frozenset(avro_kind(branch, self._named) for branch in others)
        if len(others) == 1:
            single = self.compile(others[0])
            return None if single is None else lambda value: None if value is None else single(value)
        if len(others) == 2 and kinds in AVRO_NARROWED_UNIONS:
            return None
        return self._members(others)

    def _members(self, others: list[Any]) -> Convert:
        shapes = [self.compile(branch) for branch in others]
        matches = [_avro_match(branch, self._named) for branch in others]
        names = [f"member{i}" for i in range(len(others))]

        def shape(value: Any) -> Any:
            if value is None:
                return None
            for index, match in enumerate(matches):
                found, inner = match(value)
                if found:
                    convert = shapes[index]
                    member = inner if convert is None else convert(inner)
                    return {name: member if i == index else None for i, name in enumerate(names)}
            raise BadPayload(f"a union value {type(value).__name__} of no branch")

        return shape


def _avro_match(branch: Any, named: dict[str, Any]) -> Callable[[Any], tuple[bool, Any]]:
    """Whether a value fastavro read from a union is of this branch, and the value itself:
    named types come as (name, value) when the union holds several (return_named_type),
    other values are told apart by their Python type."""
    resolved = named.get(branch, branch) if isinstance(branch, str) else branch
    name = resolved.get("name") if isinstance(resolved, dict) else None
    logical = resolved.get("logicalType") if isinstance(resolved, dict) else None
    python_type = _AVRO_PYTHON_TYPES.get(logical) or _AVRO_PYTHON_TYPES.get(avro_kind(branch, named))

    def match(value: Any) -> tuple[bool, Any]:
        if type(value) is tuple and name is not None:
            return value[0] == name, value[1]
        return type(value) is python_type, value  # exactly: a bool is no int, a datetime no date

    return match


_AVRO_PYTHON_TYPES: dict[str | None, type] = {
    "boolean": bool,
    "int": int,
    "long": int,
    "float": float,
    "double": float,
    "string": str,
    "enum": str,
    "bytes": bytes,
    "fixed": bytes,
    "record": dict,
    "error": dict,
    "array": list,
    "map": dict,
    "decimal": decimal.Decimal,
    "date": datetime.date,
    "timestamp-millis": datetime.datetime,
    "timestamp-micros": datetime.datetime,
    "local-timestamp-millis": datetime.datetime,
    "local-timestamp-micros": datetime.datetime,
}


# --- Protobuf -------------------------------------------------------------------------------------


class ProtobufDecoder:
    """Protobuf bodies of one writer schema, read into the reader's struct field by field
    name. The payload's message indexes say which message of the writer's file it holds; one
    of another name than the reader's message is an error, not a struct of nulls."""

    def __init__(
        self, writer: ParsedSchema, reader: ParsedSchema, reader_type: DataType, reader_id: int
    ) -> None:
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

        from schemaregistry.serde import ProtobufCodec, codec_for

        codec, reader_codec = codec_for(writer), codec_for(reader)
        assert isinstance(codec, ProtobufCodec) and isinstance(reader_codec, ProtobufCodec)
        self._codec = codec
        self._reader_message = reader_codec.message_type([0]).full_name
        self._reader_type = reader_type  # the side's Spark type
        self._reader_id = reader_id
        self._errors = (DecodeError, ValueError, OverflowError, RecursionError)
        self._by_indexes: dict[tuple[int, ...], tuple[Any, Convert] | str] = {}

    def __call__(self, payload: bytes) -> Any:
        from schemaregistry.wire import unframe

        _, indexes, body = unframe(payload, protobuf=True)
        found = self._message(tuple(indexes or [0]))
        if isinstance(found, str):
            raise BadPayload(found)
        cls, convert = found
        try:
            return convert(cls.FromString(body))
        except self._errors as error:
            raise BadPayload(f"not a {cls.DESCRIPTOR.full_name}: {error}") from None

    def _message(self, indexes: tuple[int, ...]) -> tuple[Any, Convert] | str:
        from schemaregistry.serde import NoSuchMessage

        if indexes not in self._by_indexes:
            try:
                self._by_indexes[indexes] = self._build(indexes)
            except (NoSuchMessage, Incompatible) as error:
                self._by_indexes[indexes] = str(error)
        return self._by_indexes[indexes]

    def _build(self, indexes: tuple[int, ...]) -> tuple[Any, Convert]:
        cls = self._codec.message_class(indexes)
        name, reader = cls.DESCRIPTOR.full_name, self._reader_type
        if name != self._reader_message:
            raise Incompatible(f"a {name}, not the reader's {self._reader_message}")
        assert isinstance(reader, StructType)  # a message's type (schematypes.protobuf_type)
        try:
            return cls, protobuf_converter(cls.DESCRIPTOR, reader)
        except Incompatible as error:
            reader_id = self._reader_id
            raise Incompatible(f"{name} does not fit the reader's schema {reader_id}: {error}") from None


def protobuf_converter(message: Descriptor, reader: StructType) -> Convert:
    """A message of `message`'s type to a dict of the reader's fields. Fields that are not
    in the message are null; fields of another type than the reader's are Incompatible.
    Unset fields with presence (optional, messages, oneof members) are null, others their
    default value, as kctl consume shows them."""
    getters = []
    for field in reader.fields:
        written = message.fields_by_name.get(field.name)
        getters.append((field.name, None if written is None else _protobuf_getter(written, field.dataType)))

    def convert(value: Any) -> dict[str, Any]:
        return {name: None if get is None else get(value) for name, get in getters}

    return convert


def _protobuf_getter(field: FieldDescriptor, reader: DataType) -> Convert:
    name = field.name
    convert = _protobuf_value(field, reader)
    if field.has_presence and not field.is_repeated:
        return lambda message: convert(getattr(message, name)) if message.HasField(name) else None
    return lambda message: convert(getattr(message, name))


def _protobuf_value(field: FieldDescriptor, reader: DataType) -> Convert:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        if not isinstance(reader, MapType):
            raise Incompatible(f"field {field.name} is a map, not {reader.simpleString()}")
        key = _protobuf_single(entry.fields_by_name["key"], reader.keyType)
        value = _protobuf_single(entry.fields_by_name["value"], reader.valueType)
        return lambda entries: {key(k): value(v) for k, v in entries.items()}
    if field.is_repeated:
        if not isinstance(reader, ArrayType):
            raise Incompatible(f"field {field.name} is repeated, not {reader.simpleString()}")
        element = _protobuf_single(field, reader.elementType)
        return lambda items: [element(item) for item in items]
    return _protobuf_single(field, reader)


def _protobuf_single(field: FieldDescriptor, reader: DataType) -> Convert:
    """One value of a field (an element of a repeated one) as the reader's type."""
    message = field.message_type
    if message is not None and message.full_name != TIMESTAMP_MESSAGE:
        if not isinstance(reader, StructType):
            raise Incompatible(f"field {field.name} is a {message.full_name}, not {reader.simpleString()}")
        return protobuf_converter(message, reader)
    written = protobuf_single_type(field, ())
    if written != reader:
        raise Incompatible(f"field {field.name} is {written.simpleString()}, not {reader.simpleString()}")
    if message is not None:
        return lambda timestamp: timestamp.ToDatetime(tzinfo=datetime.UTC)
    if field.enum_type is not None:
        names = {value.number: value.name for value in field.enum_type.values}
        return lambda number: names.get(number, str(number))
    if isinstance(reader, DecimalType):  # uint64, fixed64
        return decimal.Decimal
    return _identity


def _identity(value: Any) -> Any:
    return value
