"""key.format/value.format without Spark: the options, registry schemas to Spark types and back,
payloads decoded into the reader's type (and why not), Spark values encoded with the registry's
schemas. Schemas are parsed in-process; a stand-in registry counts what it is asked."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kctl.spark.decoding import BatchDecoder, DecodedSide, SideDecoder, SourceDecoding
from kctl.spark.encoding import EncodedSide, SideEncoder, input_converter
from kctl.spark.formats import registry_formats
from kctl.spark.options import sink_options, source_options
from kctl.spark.produce import sink_columns
from kctl.spark.schema import arrow_schema
from kctl.spark.schematypes import UnsupportedSchema, avro_schema_for, spark_type
from schemaregistry import schemas, serde
from schemaregistry.client import RegistryError, RegistryUnreachable

pytestmark = pytest.mark.unit

BASE = {"kafka.bootstrap.servers": "b:9092", "subscribe": "orders"}
USER = {
    "type": "record",
    "name": "User",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": ["null", "int"], "default": None},
    ],
}
LINE_PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Line {
  int64 id = 1;
  optional string note = 2;
  repeated string tags = 3;
  map<string, int32> counts = 4;
  Part part = 5;
  google.protobuf.Timestamp at = 6;
  Kind kind = 7;
  uint64 big = 8;
  bytes data = 9;
  message Part { int32 n = 1; }
  enum Kind { NONE = 0; BOOK = 1; }
}
message Other { string x = 1; }
"""


class Registry:
    """Schemas by id, as RegistryClient.parsed_schema_by_id hands them out, counting calls."""

    def __init__(self, **by_id: schemas.ParsedSchema) -> None:
        self.by_id = {int(key.removeprefix("id")): schema for key, schema in by_id.items()}
        self.asked: list[int] = []

    def parsed_schema_by_id(self, schema_id: int) -> schemas.ParsedSchema:
        self.asked.append(schema_id)
        if schema_id not in self.by_id:
            raise RegistryError(404, 40403, f"Schema {schema_id} not found")
        return self.by_id[schema_id]


def avro(document) -> schemas.ParsedSchema:
    return schemas.parse("AVRO", json.dumps(document))


def decoder(schema_type: str, reader_id: int, registry: Registry) -> SideDecoder:
    data_type = spark_type(registry.by_id[reader_id])
    side = DecodedSide("value", schema_type, reader_id, data_type)
    return SideDecoder(side, registry)


# --- options --------------------------------------------------------------------------------------


def test_formats_are_parsed_with_the_other_options_and_absent_without_them():
    assert source_options(BASE, streaming=False).formats is None
    options = source_options(
        {
            **BASE,
            "value.format": "Avro",
            "key.format": "json-schema",
            "Schema.Registry.Url": "http://r:8081",
            "value.subject": "users",
            "failOnDecodeError": "true",
        },
        streaming=False,
    )
    assert options.formats is not None
    assert [(s.side, s.schema_type, s.subject) for s in options.formats.sides] == [
        ("key", "JSON", None),
        ("value", "AVRO", "users"),
    ]
    assert (options.formats.url, options.formats.fail_on_decode_error) == ("http://r:8081", True)
    sink = sink_options(
        {**BASE, "value.format": "protobuf", "schema.registry.url": "u", "auto.register.schemas": "true"},
        True,
    )
    assert sink.formats is not None and sink.formats.auto_register


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"value.format": "avro"}, "value.format needs the option schema.registry.url"),
        ({"value.format": "thrift", "schema.registry.url": "u"}, "invalid value.format 'thrift'"),
        ({"key.subject": "k", "schema.registry.url": "u"}, "key.subject is for key.format"),
        (
            {"value.format": "avro", "schema.registry.url": "u", "failOnDecodeError": "yes"},
            "failOnDecodeError",
        ),
    ],
)
def test_wrong_format_options_fail_when_the_query_is_defined(options, message):
    with pytest.raises(ValueError, match=message):
        registry_formats({k.lower(): v for k, v in options.items()})


def test_a_subject_needs_one_topic_to_be_named_after():
    formats = registry_formats({"value.format": "avro", "schema.registry.url": "u"})
    assert formats is not None
    assert formats.sides[0].subject_for("orders") == "orders-value"
    with pytest.raises(ValueError, match="value.format needs value.subject"):
        formats.sides[0].subject_for(None)


def test_an_encoded_side_may_be_any_type_for_the_sink_columns():
    schema = StructType([StructField("value", StructType([StructField("a", IntegerType())]))])
    with pytest.raises(ValueError, match="column value has type"):
        sink_columns(schema, "t")
    assert sink_columns(schema, "t", frozenset({"value"})).key is False


# --- registry schemas as Spark types --------------------------------------------------------------


def test_avro_types_follow_spark_avro():
    schema = avro(
        {
            "type": "record",
            "name": "R",
            "fields": [
                {"name": "i", "type": "int"},
                {"name": "wide", "type": ["int", "long"]},
                {"name": "real", "type": ["null", "float", "double"]},
                {"name": "either", "type": ["string", "long"]},
                {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                {"name": "micros", "type": {"type": "long", "logicalType": "timestamp-micros"}},
                {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
                {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
                {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
                {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}},
                {"name": "m", "type": {"type": "map", "values": ["null", "string"]}},
            ],
        }
    )
    assert spark_type(schema).simpleString() == (
        "struct<i:int,wide:bigint,real:double,either:struct<member0:string,member1:bigint>,day:date,"
        "micros:timestamp,local:timestamp_ntz,clock:int,id:string,f:binary,m:map<string,string>>"
    )
    fields = {f.name: f for f in spark_type(schema).fields}
    assert (fields["i"].nullable, fields["real"].nullable) == (False, True)
    assert fields["m"].dataType.valueContainsNull


def test_recursive_and_too_wide_schemas_have_no_spark_type():
    linked = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"], "default": None}],
    }
    with pytest.raises(UnsupportedSchema, match="record Node refers to itself"):
        spark_type(avro(linked))
    wide = {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 0}
    with pytest.raises(UnsupportedSchema, match="wider than Spark's 38 digits"):
        spark_type(avro(wide))
    tree = 'syntax = "proto3"; message T { repeated T children = 1; }'
    with pytest.raises(UnsupportedSchema, match="message T contains itself"):
        spark_type(schemas.parse("PROTOBUF", tree))


def test_protobuf_types_follow_spark_protobuf():
    assert spark_type(schemas.parse("PROTOBUF", LINE_PROTO)).simpleString() == (
        "struct<id:bigint,note:string,tags:array<string>,counts:map<string,int>,part:struct<n:int>,"
        "at:timestamp,kind:string,big:decimal(20,0),data:binary>"
    )


def test_json_schema_types_from_properties_refs_and_nullable_choices():
    document = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "score": {"type": ["number", "null"]},
            "mixed": {"type": ["string", "integer"]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "color": {"enum": ["red", "blue"]},
            "maybe": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/P"}]},
            "anything": {},
        },
        "definitions": {"P": {"type": "object", "properties": {"x": {"type": "boolean"}}}},
    }
    assert spark_type(schemas.parse("JSON", json.dumps(document))).simpleString() == (
        "struct<id:bigint,score:double,mixed:string,labels:map<string,string>,color:string,"
        "maybe:struct<x:boolean>,anything:string>"
    )


def test_avro_schema_for_a_dataframe_reads_back_as_the_same_type():
    data_type = StructType(
        [
            StructField("id", LongType(), False),
            StructField("tags", ArrayType(StringType(), False)),
            StructField("at", TimestampType()),
            StructField("day", DateType()),
            StructField("price", DecimalType(9, 2)),
            StructField("raw", BinaryType()),
            StructField("inner", StructType([StructField("n", IntegerType())])),
            StructField("m", MapType(StringType(), LongType())),
        ]
    )
    derived = avro_schema_for(data_type)
    assert derived["name"] == "topLevelRecord"
    assert derived["fields"][0] == {"name": "id", "type": "long"}
    assert derived["fields"][1]["type"] == ["null", {"type": "array", "items": "string"}]
    assert derived["fields"][1]["default"] is None
    assert derived["fields"][6]["type"][1]["namespace"] == "topLevelRecord"
    assert spark_type(avro(derived)) == data_type
    with pytest.raises(UnsupportedSchema, match="Avro maps have string keys"):
        avro_schema_for(MapType(IntegerType(), StringType()))


# --- decoding -------------------------------------------------------------------------------------


def test_avro_payloads_decode_with_resolution_and_schemas_are_fetched_once_per_id():
    v2 = {**USER, "fields": [*USER["fields"], {"name": "team", "type": "string", "default": "none"}]}
    registry = Registry(id1=avro(USER), id2=avro(v2))
    old, new = serde.Encoder(1, registry.by_id[1]), serde.Encoder(2, registry.by_id[2])
    payloads = [old.encode({"name": f"u{i}", "age": i}) for i in range(50)]
    payloads.append(new.encode({"name": "x", "team": "red"}))
    side_decoder = decoder("AVRO", 2, registry)
    decoded = side_decoder.decode_all(payloads)
    assert decoded.values[0] == {"name": "u0", "age": 0, "team": "none"}
    assert decoded.values[-1] == {"name": "x", "age": None, "team": "red"}
    assert decoded.schema_ids == [1] * 50 + [2]
    assert registry.asked.count(1) == 1  # the writer's schema for 50 records (RegistryClient caches the rest)
    asked = len(registry.asked)
    side_decoder.decode_all(payloads)
    assert len(registry.asked) == asked


def test_what_does_not_decode_is_null_with_its_reason_and_bytes():
    registry = Registry(id1=avro(USER), id2=schemas.parse("JSON", '{"type": "object"}'))
    good = serde.Encoder(1, registry.by_id[1]).encode({"name": "a"})
    payloads = [b"text", b"\x00\x00\x00\x00\x07\x02", b"\x00\x00\x00\x00\x02{}", good[:6], None, good]
    decoded = decoder("AVRO", 1, registry).decode_all(payloads)
    assert decoded.values[:5] == [None] * 5 and decoded.values[5] == {"name": "a", "age": None}
    assert decoded.schema_ids == [None, 7, 2, 1, None, 1]
    assert decoded.raws == [*payloads[:4], None, None]
    errors = decoded.errors
    assert "not in Confluent's wire format" in errors[0]
    assert errors[1] == "schema 7: Schema 7 not found"
    assert errors[2] == "schema 2 is JSON, not AVRO"
    assert errors[3].startswith("does not decode with schema 1: ")
    assert errors[4:] == [None, None]


def test_a_registry_that_does_not_answer_fails_the_task():
    class Down:
        def parsed_schema_by_id(self, schema_id):
            raise RegistryUnreachable("http://r:8081", "Connection refused")

    side = DecodedSide("value", "AVRO", 1, StringType())
    with pytest.raises(RegistryUnreachable):
        SideDecoder(side, Down()).decode_all([b"\x00\x00\x00\x00\x01\x02a"])


def test_protobuf_payloads_decode_field_by_name_with_presence():
    older = LINE_PROTO.replace("uint64 big = 8;", "string big = 8;").replace("bytes data = 9;", "")
    registry = Registry(id1=schemas.parse("PROTOBUF", LINE_PROTO), id2=schemas.parse("PROTOBUF", older))
    line = serde.Encoder(1, registry.by_id[1])
    value = {"id": 3, "tags": ["a"], "counts": {"k": 2}, "part": {"n": 4}, "at": "2024-01-02T03:04:05Z"}
    payloads = [
        line.encode({**value, "kind": "BOOK", "big": "18446744073709551615", "data": "AAE="}),
        line.encode({}),
        serde.Encoder(1, registry.by_id[1], "shop.Other").encode({"x": "y"}),
        serde.Encoder(2, registry.by_id[2]).encode({"id": 1}),
    ]
    decoded = decoder("PROTOBUF", 1, registry).decode_all(payloads)
    assert decoded.values[0] == {
        **value,
        "note": None,
        "at": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        "kind": "BOOK",
        "big": Decimal(2**64 - 1),
        "data": b"\x00\x01",
    }
    empty = decoded.values[1]
    assert (empty["id"], empty["note"], empty["part"], empty["at"], empty["kind"]) == (
        0,
        None,
        None,
        None,
        "NONE",
    )
    assert decoded.errors[2] == "does not decode with schema 1: a shop.Other, not the reader's shop.Line"
    assert "field big is string, not decimal(20,0)" in decoded.errors[3]


def test_json_payloads_conform_to_the_reader_type_and_name_the_field_that_does_not():
    document = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "extra": {},
        },
    }
    registry = Registry(id5=schemas.parse("JSON", json.dumps(document)))
    framed = [
        b"\x00\x00\x00\x00\x05" + json.dumps(v).encode()
        for v in (
            {"id": 1.0, "items": [{"n": 2}], "extra": {"a": [1]}, "unknown": True},
            {"id": 1, "items": [{"n": 2}, {"n": "three"}]},
            [1, 2],
        )
    ]
    decoded = decoder("JSON", 5, registry).decode_all([*framed, b"\x00\x00\x00\x00\x05{"])
    assert decoded.values[0] == {"id": 1, "items": [{"n": 2}], "extra": '{"a":[1]}'}
    assert (
        decoded.errors[1]
        == "does not decode with schema 5: field /items/1/n: expected an integer, got a string"
    )
    assert decoded.errors[2] == "does not decode with schema 5: field /: expected an object, got an array"
    assert decoded.errors[3].startswith("does not decode with schema 5: ")


def test_a_batch_gets_typed_columns_and_a_value_arrow_refuses_is_an_error_not_a_failed_batch():
    scaled = {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}
    wider = {**scaled, "precision": 9}
    registry = Registry(id1=avro(scaled), id2=avro(wider))
    payloads = [
        serde.Encoder(1, registry.by_id[1]).encode("1.25"),
        serde.Encoder(2, registry.by_id[2]).encode("1234567.00"),
    ]
    side = DecodedSide("value", "AVRO", 1, DecimalType(4, 2))
    decoding = SourceDecoding("http://unused", (side,), fail_on_error=False)
    batch_decoder = BatchDecoder(decoding, include_headers=False)
    batch_decoder._sides = [SideDecoder(side, registry)]
    columns = {
        "key": pa.array([None, None], pa.binary()),
        "value": pa.array(payloads, pa.binary()),
        "topic": pa.array(["t", "t"]),
        "partition": pa.array([0, 0], pa.int32()),
        "offset": pa.array([0, 1], pa.int64()),
        "timestamp": pa.array([0, 0], pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0, 0], pa.int32()),
    }
    out = batch_decoder.apply(pa.RecordBatch.from_pydict(columns))
    assert out.schema.equals(arrow_schema(decoding.schema(False)))
    assert out.column("value").to_pylist() == [Decimal("1.25"), None]
    assert out.column("value_schema_id").to_pylist() == [1, 2]
    assert out.column("value_error").to_pylist()[0] is None
    assert "does not fit decimal128(4, 2)" in out.column("value_error").to_pylist()[1]
    assert out.column("value_raw").to_pylist() == [None, payloads[1]]


# --- encoding -------------------------------------------------------------------------------------


def test_spark_values_encode_as_confluents_avro_and_a_misfit_names_its_field():
    schema = avro(
        {
            "type": "record",
            "name": "E",
            "fields": [
                {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
                {
                    "name": "price",
                    "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
                },
                {"name": "either", "type": ["int", "string"]},
                {"name": "m", "type": {"type": "map", "values": "long"}},
            ],
        }
    )
    data_type = spark_type(schema)
    at = datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.UTC)
    row = {
        "at": at,
        "day": datetime.date(2024, 1, 2),
        "price": Decimal("12.30"),
        "either": {"member0": None, "member1": "s"},
        "m": [("a", 1)],
    }
    encoder = SideEncoder(EncodedSide("value", "e-value", 1, data_type), Registry(id1=schema))
    payload = encoder.encode_all([row, None])
    assert payload[1] is None
    side = DecodedSide("value", "AVRO", 1, data_type)
    back = SideDecoder(side, Registry(id1=schema)).decode_all(payload[:1]).values[0]
    assert back == {**row, "m": {"a": 1}}
    with pytest.raises(
        ValueError, match="a row's value does not fit schema 1 of subject e-value: field /m/a"
    ):
        encoder.encode_all([{**row, "m": [("a", "not a long")]}])


def test_spark_values_encode_in_protobuf_and_json_mappings():
    line = schemas.parse("PROTOBUF", LINE_PROTO)
    data_type = spark_type(line)
    value = {
        "id": 7,
        "note": None,
        "tags": ["a"],
        "counts": [("k", 1)],
        "part": {"n": 2},
        "at": datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC),
        "kind": "BOOK",
        "big": Decimal(5),
        "data": b"\x00\x01",
    }
    payload = serde.Encoder(1, line).encode(input_converter(line, data_type)(value))
    decoded = decoder("PROTOBUF", 1, Registry(id1=line)).decode_all([payload]).values[0]
    assert decoded == {**value, "counts": {"k": 1}}

    document = schemas.parse("JSON", '{"type": "object", "properties": {"n": {"type": "number"}}}')
    json_type = StructType(
        [
            StructField("n", DecimalType(5, 2)),
            StructField("raw", BinaryType()),
            StructField("gone", StringType()),
        ]
    )
    shaped = input_converter(document, json_type)({"n": Decimal("1.50"), "raw": b"\x01", "gone": None})
    assert shaped == {"n": 1.5, "raw": "AQ=="}
