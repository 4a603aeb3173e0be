"""Keys and values in Confluent's wire format, decoded into Spark columns by the source.

The driver picks the reader schema when the query is defined (the subject's latest version:
`plan_decoding`), and the column's Spark type follows from it (kctl.spark.schematypes).
Executors decode an Arrow batch at a time (`BatchDecoder`): each payload's framing names
its writer schema, fetched from the registry once per id per task, and the record is read
with it into the reader's type: Avro by Avro's schema resolution (fastavro), Protobuf and
JSON Schema field by field, by name.

A record that cannot be decoded is never dropped: its `value` is null, `value_error` says
why (not framed, schema unknown to the registry, of another type, bytes that do not decode)
and `value_raw` keeps its bytes (`key_*` alike); failOnDecodeError=true fails the task
instead. A registry that does not answer fails the task too (Spark retries it): records are
not nulled for an outage.
"""

from __future__ import annotations

import datetime
import decimal
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructType,
)

from kctl.spark.formats import RegistryFormats
from kctl.spark.options import Subscription
from kctl.spark.schema import arrow_schema, decoded_source_schema
from kctl.spark.schematypes import (
    AVRO_NARROWED_UNIONS,
    TIMESTAMP_MESSAGE,
    avro_branches,
    avro_kind,
    protobuf_single_type,
    spark_type,
)
from schemaregistry.client import RegistryClient, RegistryClientError, RegistryError
from schemaregistry.wire import BadPayload

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]

    from schemaregistry.schemas import ParsedSchema

Convert = Callable[[Any], Any]
MAX_SCHEMA_ID = 2**31 - 1  # ids are Java ints in Confluent's registry, and int columns here
# logical types read as their underlying type, as spark-avro reads them (time-* as int/bigint,
# uuid as string); the others fastavro reads into what the Spark type holds
_AVRO_RAW_LOGICAL = frozenset({"time-millis", "time-micros", "uuid"})


@dataclass(frozen=True)
class DecodedSide:
    """One decoded side as the driver planned it; travels to the executors."""

    side: str  # "key" or "value"
    schema_type: str  # AVRO, PROTOBUF or JSON
    reader_id: int  # the id of the subject's latest version when the query was defined
    data_type: DataType


@dataclass(frozen=True)
class SourceDecoding:
    url: str
    sides: tuple[DecodedSide, ...]
    fail_on_error: bool

    def schema(self, include_headers: bool) -> StructType:
        return decoded_source_schema(include_headers, {s.side: s.data_type for s in self.sides})


def plan_decoding(formats: RegistryFormats, subscription: Subscription) -> SourceDecoding:
    """The reader schemas of the decoded sides, from the registry (on the driver, once)."""
    client = RegistryClient(formats.url)
    planned = []
    for side in formats.sides:
        subject = side.subject_for(_single_topic(subscription))
        try:
            schema_id = int(client.version(subject, "latest")["id"])
            schema = client.parsed_schema_by_id(schema_id)
        except (RegistryClientError, ValueError) as error:
            raise ValueError(f"{side.option}: no schema for subject {subject}: {error}") from None
        if schema.schema_type != side.schema_type:
            raise ValueError(
                f"{side.option} is {side.schema_type} but subject {subject}'s latest schema "
                f"(id {schema_id}) is {schema.schema_type}"
            )
        planned.append(DecodedSide(side.side, side.schema_type, schema_id, spark_type(schema)))
    return SourceDecoding(formats.url, tuple(planned), formats.fail_on_decode_error)


def _single_topic(subscription: Subscription) -> str | None:
    topics = set(subscription.topics) | {tp.topic for tp in subscription.assigned}
    return next(iter(topics)) if len(topics) == 1 and subscription.pattern is None else None


class BatchDecoder:
    """Decodes the framed sides of the source's Arrow batches, for the records of one task."""

    def __init__(self, decoding: SourceDecoding, include_headers: bool) -> None:
        self._decoding = decoding
        self._schema = arrow_schema(decoding.schema(include_headers))
        client = RegistryClient(decoding.url)  # its cache holds the schemas of this task
        self._sides = [SideDecoder(side, client) for side in decoding.sides]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """`batch` (Spark's Kafka columns) with its framed sides decoded."""
        columns = {name: batch.column(name) for name in batch.schema.names}
        for decoder in self._sides:
            side = decoder.side
            decoded = decoder.decode_all(batch.column(side.side).to_pylist())
            arrow_type = self._schema.field(side.side).type
            values = _values_array(decoded, arrow_type)
            if self._decoding.fail_on_error:
                _fail_on_error(decoded, side, batch)
            columns[side.side] = values
            columns[f"{side.side}_schema_id"] = pa.array(decoded.schema_ids, pa.int32())
            columns[f"{side.side}_error"] = pa.array(decoded.errors, pa.string())
            columns[f"{side.side}_raw"] = pa.array(decoded.raws, pa.binary())
        return pa.RecordBatch.from_arrays([columns[name] for name in self._schema.names], schema=self._schema)


class Decoded:
    """One column's payloads decoded; a record in error has no value and keeps its bytes."""

    def __init__(self, payloads: list[bytes | None]) -> None:
        self.payloads = payloads
        self.values: list[Any] = [None] * len(payloads)
        self.schema_ids: list[int | None] = [None] * len(payloads)
        self.errors: list[str | None] = [None] * len(payloads)
        self.raws: list[bytes | None] = [None] * len(payloads)

    def fail(self, index: int, error: str) -> None:
        self.values[index], self.errors[index], self.raws[index] = None, error, self.payloads[index]


def _values_array(decoded: Decoded, arrow_type: pa.DataType) -> pa.Array:
    """The decoded values as one Arrow array; should a value not convert (a decimal of
    another scale, a date out of range), each is tried alone and those that fail become
    errors rather than failing the batch."""
    try:
        return pa.array(decoded.values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError):
        pass
    for index, value in enumerate(decoded.values):
        try:
            pa.array([value], arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError) as error:
            decoded.fail(index, f"the value does not fit {arrow_type}: {error}")
    return pa.array(decoded.values, arrow_type)


def _fail_on_error(decoded: Decoded, side: DecodedSide, batch: pa.RecordBatch) -> None:
    for index, error in enumerate(decoded.errors):
        if error is not None:
            topic, partition = batch.column("topic")[index].as_py(), batch.column("partition")[index].as_py()
            offset = batch.column("offset")[index].as_py()
            raise ValueError(
                f"the {side.side} of {topic}/{partition} at offset {offset} does not decode: {error} "
                "(failOnDecodeError=true)"
            )


class SideDecoder:
    """Payloads of one side to values of its Spark type; the schemas of the ids it meets are
    fetched once and each writer schema's decoder built once."""

    def __init__(self, side: DecodedSide, client: RegistryClient) -> None:
        self.side = side
        self._client = client
        self._by_id: dict[int, Convert | str] = {}  # a decoder of framed payloads, or why none

    def decode_all(self, payloads: list[bytes | None]) -> Decoded:
        decoded = Decoded(payloads)
        for index, payload in enumerate(payloads):
            if payload is None:
                continue  # a null key or a tombstone: null, and no error
            schema_id = _schema_id(payload)
            if schema_id is None:
                decoded.fail(index, "not in Confluent's wire format (magic byte 0, schema id)")
                continue
            decoded.schema_ids[index] = schema_id
            decode = self._decoder(schema_id)
            if isinstance(decode, str):
                decoded.fail(index, decode)
                continue
            try:
                decoded.values[index] = decode(payload)
            except BadPayload as error:
                decoded.fail(index, f"does not decode with schema {schema_id}: {error}")
        return decoded

    def _decoder(self, schema_id: int) -> Convert | str:
        if schema_id not in self._by_id:
            self._by_id[schema_id] = self._build(schema_id)
        return self._by_id[schema_id]

    def _build(self, schema_id: int) -> Convert | str:
        """The decoder of payloads written with schema `schema_id`, or why there is none."""
        side = self.side
        try:
            writer = self._client.parsed_schema_by_id(schema_id)
        except RegistryError as error:
            if error.status != 404:
                raise  # the registry failing is no answer about the record: the task fails
            return f"schema {schema_id}: {error}"
        except ValueError as error:  # the registry's schema does not parse here
            return f"schema {schema_id} cannot be read: {error}"
        if writer.schema_type != side.schema_type:
            return f"schema {schema_id} is {writer.schema_type}, not {side.schema_type}"
        if side.schema_type == "AVRO":
            return _avro_decoder(writer, self._client.parsed_schema_by_id(side.reader_id))
        if side.schema_type == "PROTOBUF":
            return _ProtobufDecoder(writer, self._client.parsed_schema_by_id(side.reader_id), side)
        return _json_decoder(side.data_type)


def _schema_id(payload: bytes) -> int | None:
    if len(payload) < 5 or payload[0] != 0:
        return None
    schema_id = int.from_bytes(payload[1:5], "big")
    return schema_id if schema_id <= MAX_SCHEMA_ID else None


class Incompatible(ValueError):
    """A writer's message the reader's type cannot hold: another message than the reader's,
    or a field of another type than the reader's field of that name."""


# --- Avro -----------------------------------------------------------------------------------------


def _avro_decoder(writer: ParsedSchema, reader: ParsedSchema) -> Convert:
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


class _ProtobufDecoder:
    """Protobuf bodies of one writer schema, read into the reader's struct field by field
    name. The payload's message indexes say which message of the writer's file it holds; one
    of another name than the reader's message is an error, not a struct of nulls."""

    def __init__(self, writer: ParsedSchema, reader: ParsedSchema, side: DecodedSide) -> None:
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

        from schemaregistry.serde import ProtobufCodec, codec_for

        codec, reader_codec = codec_for(writer), codec_for(reader)
        assert isinstance(codec, ProtobufCodec) and isinstance(reader_codec, ProtobufCodec)
        self._codec = codec
        self._reader_message = reader_codec.message_type([0]).full_name
        self._side = side
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
        name, reader = cls.DESCRIPTOR.full_name, self._side.data_type
        if name != self._reader_message:
            raise Incompatible(f"a {name}, not the reader's {self._reader_message}")
        assert isinstance(reader, StructType)  # a message's type (schematypes.protobuf_type)
        try:
            return cls, protobuf_converter(cls.DESCRIPTOR, reader)
        except Incompatible as error:
            reader_id = self._side.reader_id
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


# --- JSON Schema ----------------------------------------------------------------------------------


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


def _json_decoder(reader: DataType) -> Convert:
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

    def conform(value: Any) -> Any:
        if value is None:
            return None
        if type(value) is not dict:
            raise Mismatch(f"expected an object, got {_json_kind(value)}")
        out = {}
        for name, inner in fields:
            try:
                out[name] = inner(value.get(name))
            except Mismatch as mismatch:
                raise mismatch.at(name) from None
        return out

    return conform


def _json_array(element: Convert) -> Convert:
    def conform(value: Any) -> Any:
        if value is None:
            return None
        if type(value) is not list:
            raise Mismatch(f"expected an array, got {_json_kind(value)}")
        out = []
        for index, item in enumerate(value):
            try:
                out.append(element(item))
            except Mismatch as mismatch:
                raise mismatch.at(str(index)) from None
        return out

    return conform


def _json_map(entry: Convert) -> Convert:
    def conform(value: Any) -> Any:
        if value is None:
            return None
        if type(value) is not dict:
            raise Mismatch(f"expected an object, got {_json_kind(value)}")
        out = {}
        for key, item in value.items():
            try:
                out[key] = entry(item)
            except Mismatch as mismatch:
                raise mismatch.at(key) from None
        return out

    return conform


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
