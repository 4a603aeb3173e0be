"""Key and value columns encoded in Confluent's wire format by the sink (key.format, value.format).

The driver chooses each side's schema when the query is defined (`plan_encoding`): the
subject's latest version, or, with auto.register.schemas=true and Avro, the schema derived
from the column's Spark type (kctl.spark.schematypes.avro_schema_for), registered under the
subject as Confluent's serializers register theirs. Executors encode an Arrow batch at a
time with schemaregistry.serde's Encoder, the schema fetched once per task. A row that does
not fit fails the task, naming the field, as Spark's to_avro fails; a null column value is
a null record value (a tombstone), not encoded.

The Encoder takes JSON-like values; Spark's values are made so here: for Avro following the
schema (timestamps to epoch millis or micros, dates to days, decimals to exact strings, a
union's member0, member1... struct to the member that is set), for Protobuf and JSON Schema
following the column's type (binary as base64, timestamps and dates as RFC 3339 text, as
their JSON mappings write them; JSON objects leave out null fields).
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    MapType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kctl.spark.formats import RegistryFormats, SideFormat
from kctl.spark.schematypes import AVRO_PRIMITIVES, avro_branches, avro_schema_for
from schemaregistry.client import RegistryClient, RegistryClientError

if TYPE_CHECKING:
    from schemaregistry.schemas import ParsedSchema

Convert = Callable[[Any], Any]
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class EncodedSide:
    """One encoded side as the driver chose it; travels to the executors."""

    side: str  # "key" or "value"
    subject: str
    schema_id: int
    data_type: DataType  # the column's


@dataclass(frozen=True)
class SinkEncoding:
    url: str
    sides: tuple[EncodedSide, ...]


def plan_encoding(formats: RegistryFormats, topic: str | None, schema: StructType) -> SinkEncoding:
    """The schema of each encoded side, from the registry (on the driver, once)."""
    client = RegistryClient(formats.url)
    types = {field.name: field.dataType for field in schema.fields}
    sides = []
    for side in formats.sides:
        if side.side not in types:
            raise ValueError(f"{side.option} is set but there is no {side.side} column")
        subject = side.subject_for(topic)
        schema_id = _chosen_schema(client, side, subject, types[side.side], formats.auto_register)
        sides.append(EncodedSide(side.side, subject, schema_id, types[side.side]))
    return SinkEncoding(formats.url, tuple(sides))


def _chosen_schema(
    client: RegistryClient, side: SideFormat, subject: str, data_type: DataType, auto_register: bool
) -> int:
    if auto_register and side.schema_type != "AVRO":
        raise ValueError(
            f"auto.register.schemas derives Avro schemas only: register the {side.schema_type} "
            f"schema under {subject} first"
        )
    try:
        if auto_register:
            return client.register(subject, json.dumps(avro_schema_for(data_type)), "AVRO")
        schema_id = int(client.version(subject, "latest")["id"])
        schema_type = client.parsed_schema_by_id(schema_id).schema_type
    except (RegistryClientError, ValueError) as error:
        raise ValueError(f"{side.option}: no schema for subject {subject}: {error}") from None
    if schema_type != side.schema_type:
        raise ValueError(
            f"{side.option} is {side.schema_type} but subject {subject}'s latest schema "
            f"(id {schema_id}) is {schema_type}"
        )
    return schema_id


def encoded(batches: Iterator[pa.RecordBatch], encoding: SinkEncoding | None) -> Iterator[pa.RecordBatch]:
    """The sink's input batches with their encoded sides as binary columns; the schemas are
    fetched when the first batch comes (a task with no rows asks nothing)."""
    if encoding is None:
        yield from batches
        return
    encoders: list[SideEncoder] | None = None
    for batch in batches:
        if encoders is None:
            client = RegistryClient(encoding.url)
            encoders = [SideEncoder(side, client) for side in encoding.sides]
        for encoder in encoders:
            index = batch.schema.get_field_index(encoder.side.side)
            column = pa.array(encoder.encode_all(batch.column(index).to_pylist()), pa.binary())
            batch = batch.set_column(index, pa.field(encoder.side.side, pa.binary()), column)
        yield batch


class SideEncoder:
    """One side's column values to framed payloads, its schema fetched once (per task)."""

    def __init__(self, side: EncodedSide, client: RegistryClient) -> None:
        from schemaregistry.serde import Encoder

        self.side = side
        schema = client.parsed_schema_by_id(side.schema_id)
        self._encoder = Encoder(side.schema_id, schema)
        self._prepare = input_converter(schema, side.data_type)

    def encode_all(self, values: list[Any]) -> list[bytes | None]:
        from schemaregistry.serde import RecordDoesNotFit

        out: list[bytes | None] = []
        for value in values:
            if value is None:
                out.append(None)
                continue
            try:
                out.append(self._encoder.encode(self._prepare(value)))
            except RecordDoesNotFit as misfit:
                side = self.side
                raise ValueError(
                    f"a row's {side.side} does not fit schema {side.schema_id} of subject "
                    f"{side.subject}: field {misfit.field}: {misfit.reason}"
                ) from None
        return out


def input_converter(schema: ParsedSchema, data_type: DataType) -> Convert:
    """Spark values, as Arrow hands them to Python, made what the Encoder of `schema` takes."""
    if schema.schema_type == "AVRO":
        return AvroInputs(schema.parsed.named_schemas).compile(schema.parsed.fastavro)
    return json_inputs(data_type, protobuf=schema.schema_type == "PROTOBUF")


# --- Avro -----------------------------------------------------------------------------------------


def _epoch(units_per_second: int) -> Convert:
    def convert(value: Any) -> Any:
        if not isinstance(value, datetime.datetime):
            return value
        delta = (value if value.tzinfo else value.replace(tzinfo=datetime.UTC)) - EPOCH
        seconds = delta.days * 86_400 + delta.seconds
        return seconds * units_per_second + delta.microseconds * units_per_second // 1_000_000

    return convert


def _days(value: Any) -> Any:
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return (value - EPOCH.date()).days
    return value


def _exact(value: Any) -> Any:
    return format(value, "f") if isinstance(value, Decimal) else value


def _identity(value: Any) -> Any:
    return value


_AVRO_LOGICAL_INPUTS: dict[str, Convert] = {
    "timestamp-millis": _epoch(1000),
    "local-timestamp-millis": _epoch(1000),
    "timestamp-micros": _epoch(1_000_000),
    "local-timestamp-micros": _epoch(1_000_000),
    "date": _days,
    "decimal": _exact,
}


class AvroInputs:
    """Compiles an Avro schema into the conversion of Spark values to the Encoder's input.
    Values that are not what a conversion expects pass unchanged: the Encoder then says
    what does not fit, and where."""

    def __init__(self, named: dict[str, Any]) -> None:
        self._named = named
        self._records: dict[str, Convert] = {}

    def compile(self, schema: Any) -> Convert:
        if isinstance(schema, list):
            return self._union(schema)
        if isinstance(schema, str):
            if schema in AVRO_PRIMITIVES:
                return _identity
            return self._records.get(schema) or self.compile(self._named[schema])
        kind, logical = schema["type"], schema.get("logicalType")
        if logical in _AVRO_LOGICAL_INPUTS:
            return _AVRO_LOGICAL_INPUTS[logical]
        if kind in ("record", "error"):
            return self._record(schema)
        if kind == "array":
            return _list_of(self.compile(schema["items"]))
        if kind == "map":
            return _map_of(self.compile(schema["values"]))
        return self.compile(kind) if isinstance(kind, list | dict) else _identity

    def _record(self, schema: dict[str, Any]) -> Convert:
        name = schema["name"]
        if name in self._records:  # a recursive record, met again inside itself
            return self._records[name]
        fields: dict[str, Convert] = {}

        def record(value: Any) -> Any:
            if type(value) is not dict:
                return value
            return {key: fields[key](item) if key in fields else item for key, item in value.items()}

        self._records[name] = record
        fields.update({field["name"]: self.compile(field["type"]) for field in schema["fields"]})
        return record

    def _union(self, branches: list[Any]) -> Convert:
        others = avro_branches(branches)
        converts = [self.compile(branch) for branch in others]
        members = [f"member{i}" for i in range(len(others))]

        def union(value: Any) -> Any:
            if value is None:
                return None
            if len(others) > 1 and type(value) is dict and list(value) == members:
                # Spark's form of a union (the one its decoding gives): the member set
                chosen = [(c, value[m]) for c, m in zip(converts, members) if value[m] is not None]
                return chosen[0][0](chosen[0][1]) if chosen else None
            for convert in converts:  # the first branch that converts it; else as it is
                out = convert(value)
                if out is not value:
                    return out
            return value

        return union


def _list_of(item: Convert) -> Convert:
    return lambda value: [item(x) for x in value] if type(value) is list else value


def _map_of(entry: Convert) -> Convert:
    def convert(value: Any) -> Any:
        if type(value) is list:  # Arrow gives a map as (key, value) pairs
            value = dict(value)
        return {key: entry(item) for key, item in value.items()} if type(value) is dict else value

    return convert


# --- Protobuf and JSON Schema ---------------------------------------------------------------------


def json_inputs(data_type: DataType, protobuf: bool) -> Convert:
    """A Spark value of `data_type` in the JSON form the Protobuf (json_format) or JSON Schema
    encoder takes."""
    if isinstance(data_type, StructType):
        return _object_of(data_type, protobuf)
    if isinstance(data_type, ArrayType):
        return _list_of(json_inputs(data_type.elementType, protobuf))
    if isinstance(data_type, MapType):
        entry = json_inputs(data_type.valueType, protobuf)
        key = _identity if protobuf else str
        return lambda pairs: None if pairs is None else {key(k): entry(v) for k, v in pairs}
    if isinstance(data_type, BinaryType):
        return lambda value: None if value is None else base64.b64encode(value).decode("ascii")
    if isinstance(data_type, TimestampType | TimestampNTZType):
        return _rfc3339 if protobuf or isinstance(data_type, TimestampType) else _iso
    if isinstance(data_type, DateType):
        return _iso
    if isinstance(data_type, DecimalType):
        return _exact if protobuf else _number if data_type.scale else _integral
    return _identity


def _object_of(data_type: StructType, protobuf: bool) -> Convert:
    fields = [(field.name, json_inputs(field.dataType, protobuf)) for field in data_type.fields]

    def convert(value: Any) -> Any:
        if value is None:
            return None
        if protobuf:  # json_format reads null as the field left unset
            return {name: inner(value[name]) for name, inner in fields}
        return {name: inner(value[name]) for name, inner in fields if value[name] is not None}

    return convert


def _rfc3339(value: Any) -> Any:
    if value is None:
        return None
    utc = value.astimezone(datetime.UTC) if value.tzinfo else value
    return utc.replace(tzinfo=None).isoformat() + "Z"


def _iso(value: Any) -> Any:
    return None if value is None else value.isoformat()


def _integral(value: Any) -> Any:
    return None if value is None else int(value)


def _number(value: Any) -> Any:
    return None if value is None else float(value)
