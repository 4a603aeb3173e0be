"""JSON values to and from Avro, Protobuf and JSON Schema payloads, checked against
confluent-kafka's own serializers and deserializers (offline: their mock registry, or none)."""

import importlib.util
import io
import json
import random
import sys
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.common.protobuf import _create_index_array
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2

from schemaregistry import schemas
from schemaregistry.serde import (
    AvroCodec,
    Encoder,
    JsonSchemaCodec,
    NoSuchMessage,
    ProtobufCodec,
    RecordDoesNotFit,
    codec_for,
    decode,
)
from schemaregistry.wire import BadPayload, frame, unframe

pytestmark = pytest.mark.unit

CONTEXT = SerializationContext("orders", MessageField.VALUE)


# --- Avro -----------------------------------------------------------------------------------------

ADDRESS = {
    "type": "record",
    "name": "Address",
    "namespace": "com.acme",
    "fields": [{"name": "street", "type": "string"}, {"name": "zip", "type": "string"}],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "com.acme",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "count", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 8, "scale": 2}},
        {"name": "ratio", "type": "float"},
        {"name": "weight", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "address", "type": "Address"},
        {"name": "billing", "type": ["null", "com.acme.Address"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "scores", "type": {"type": "map", "values": "int"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "blob", "type": "bytes"},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "source", "type": "string", "default": "web"},
        {"name": "raw", "type": "bytes", "default": "\u00ff\u0000"},
        {"name": "parent", "type": ["null", "long"], "default": None},
    ],
}
ORDER_VALUE = {
    "id": 2**40,
    "count": 3,
    "price": 12.5,
    "ratio": 0.5,
    "weight": 1,
    "paid": True,
    "note": "rush",
    "address": {"street": "1 Main St", "zip": "75001"},
    "billing": None,
    "tags": ["a", "b"],
    "scores": {"alice": 1},
    "status": "PAID",
    "blob": "\u00e9\u0001",
    "digest": "ab",
    "at": 1700000000000,
    "day": 19000,
    "uuid": "5f0c3b46-0d1e-4c4f-9a0b-6d0f5bde2a43",
}


def avro_codec(schema: Any, *references: Any) -> AvroCodec:
    named: dict[str, Any] = {}
    for reference in references:
        fastavro.parse_schema(reference, named_schemas=named)
    return AvroCodec(fastavro.parse_schema(schema, named_schemas=named), named)


def test_avro_round_trip_gives_json_back_in_field_order() -> None:
    codec = avro_codec(ORDER, ADDRESS)
    decoded = codec.decode(codec.encode(ORDER_VALUE))
    assert list(decoded) == [field["name"] for field in ORDER["fields"]]
    assert decoded == {
        **ORDER_VALUE,
        "price": "12.50",  # decimals as exact strings
        "weight": 1.0,
        "source": "web",  # defaults filled in
        "raw": "\u00ff\u0000",  # a bytes default is latin-1, as bytes values are
        "parent": None,
    }
    json.dumps(decoded)
    assert codec.decode(codec.encode(decoded)) == decoded  # what consume prints, produce takes


def test_confluent_kafkas_avro_deserializer_reads_what_we_write() -> None:
    registry = MockSchemaRegistryClient({"url": "mock://"})
    registry.register_schema("com.acme.Address", Schema(json.dumps(ADDRESS), "AVRO"))
    address = SchemaReference("com.acme.Address", "com.acme.Address", 1)
    schema_id = registry.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO", [address]))
    payload = frame(schema_id, avro_codec(ORDER, ADDRESS).encode(ORDER_VALUE))

    theirs = AvroDeserializer(registry)(payload, CONTEXT)

    assert theirs["id"] == 2**40 and theirs["price"] == Decimal("12.50")
    assert theirs["address"] == {"street": "1 Main St", "zip": "75001"}
    assert theirs["blob"] == b"\xe9\x01" and theirs["digest"] == b"ab" and theirs["raw"] == b"\xff\x00"
    assert theirs["at"].timestamp() == 1700000000 and str(theirs["uuid"]) == ORDER_VALUE["uuid"]
    assert (theirs["note"], theirs["status"], theirs["source"]) == ("rush", "PAID", "web")


def test_we_read_what_confluent_kafkas_avro_serializer_writes() -> None:
    registry = MockSchemaRegistryClient({"url": "mock://"})
    schema = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", "bytes", "Address"]}]}
    text = json.dumps({**schema, "fields": [{"name": "u", "type": ["null", "bytes", ADDRESS]}]})
    serializer = AvroSerializer(registry, text)
    codec = avro_codec({**schema, "fields": [{"name": "u", "type": ["null", "bytes", ADDRESS]}]})

    for value, expected in [
        (b"\x00\xff", "\x00\xff"),
        ({"street": "s", "zip": "z"}, {"street": "s", "zip": "z"}),
    ]:
        schema_id, _, body = unframe(serializer({"u": value}, CONTEXT))
        assert schema_id == 1
        assert codec.decode(body) == {"u": expected}


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"address": {"street": "s", "zip": 75001}}, "/address/zip", "expected a string, got number 75001"),
        ({"tags": ["a", "b", None]}, "/tags/2", "expected a string, got null"),
        ({"scores": {"alice": 1, "bob": "x"}}, "/scores/bob", 'expected an integer (int), got string "x"'),
        ({"nmae": "x"}, "/nmae", "not a field of record com.acme.Order"),
        ({"count": 2**31}, "/count", "out of range for an Avro int"),
        ({"id": 1.5}, "/id", "expected an integer (long), got number 1.5"),
        ({"paid": "yes"}, "/paid", "expected true or false"),
        ({"ratio": 1e39}, "/ratio", "out of range for an Avro float"),
        ({"status": "LOST"}, "/status", "not a symbol of enum com.acme.Status (NEW, PAID)"),
        ({"note": 5}, "/note", "fits none of the union's types (null, string)"),
        ({"billing": {"street": "s"}}, "/billing/zip", "missing, and the schema gives it no default"),
        ({"blob": "\u20ac"}, "/blob", "no characters above U+00FF"),
        ({"digest": "abc"}, "/digest", "3 bytes where fixed com.acme.Digest has 2"),
        ({"price": "12.345"}, "/price", "more than 2 digits after the point"),
        ({"price": 1234567.5}, "/price", "more than 8 digits"),
        ({"price": "twelve"}, "/price", "is not a number"),
        ({"price": True}, "/price", "expected a number for decimal(8, 2), got boolean true"),
    ],
)
def test_a_value_that_does_not_fit_names_the_field_at_fault(
    change: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(RecordDoesNotFit) as raised:
        avro_codec(ORDER, ADDRESS).encode({**ORDER_VALUE, **change})
    assert raised.value.field == field
    assert reason in raised.value.reason
    assert str(raised.value) == f"field {field}: {raised.value.reason}"


def test_a_missing_field_without_default_is_named_and_a_nullable_one_is_null() -> None:
    codec = avro_codec(ORDER, ADDRESS)
    without_id = {key: value for key, value in ORDER_VALUE.items() if key != "id"}
    with pytest.raises(RecordDoesNotFit, match="field /id: missing"):
        codec.encode(without_id)
    without_note = {key: value for key, value in ORDER_VALUE.items() if key != "note"}
    assert codec.decode(codec.encode(without_note))["note"] is None


def test_the_whole_record_is_slash_and_keys_are_escaped() -> None:
    with pytest.raises(RecordDoesNotFit) as raised:
        avro_codec(ORDER, ADDRESS).encode([1])
    assert (raised.value.field, raised.value.reason) == (
        "/",
        "expected an object (record com.acme.Order), got an array",
    )
    schema = {"type": "map", "values": "int"}
    with pytest.raises(RecordDoesNotFit) as raised:
        avro_codec(schema).encode({"a/b~c": "x"})
    assert raised.value.field == "/a~1b~0c"


@pytest.mark.parametrize(
    ("union", "value", "branch"),
    [
        (["double", "long"], 5, 1),  # an integer goes to long, not to the double listed first
        (["double", "long"], 5.0, 0),
        (["bytes", "string"], "abc", 1),
        (["null", "bytes"], "abc", 1),
        (["float", "int", "long"], 2**40, 2),  # too big for an int: the next branch that takes it
        ([{"type": "map", "values": "int"}, ADDRESS], {"street": "s", "zip": "z"}, 1),  # a record first
        ([ADDRESS, {"type": "map", "values": "int"}], {"a": 1}, 1),
    ],
)
def test_a_union_value_goes_to_the_branch_that_takes_it_exactly(
    union: list[Any], value: Any, branch: int
) -> None:
    body = avro_codec(union).encode(value)
    assert body[0] == branch * 2  # the branch index, zig-zag
    assert fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(union), None) is not None


def test_recursive_types_and_references() -> None:
    node = {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "value", "type": "int"},
            {"name": "next", "type": ["null", "Node"], "default": None},
        ],
    }
    codec = avro_codec(node)
    chain = {"value": 1, "next": {"value": 2, "next": {"value": 3, "next": None}}}
    assert codec.decode(codec.encode(chain)) == chain
    with pytest.raises(RecordDoesNotFit) as raised:
        codec.encode({"value": 1, "next": {"value": 2, "next": {"value": "3"}}})
    assert raised.value.field == "/next/next/value"


def test_a_record_default_goes_through_the_same_preparation_as_a_value() -> None:
    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {
                "name": "inner",
                "type": {"type": "record", "name": "I", "fields": [{"name": "b", "type": "bytes"}]},
            },
            {"name": "kept", "type": "I", "default": {"b": "\u00fe"}},
            {"name": "either", "type": ["bytes", "string"], "default": "\u00fd"},  # the first branch's
        ],
    }
    codec = avro_codec(schema)
    body = codec.encode({"inner": {"b": ""}})
    assert codec.decode(body) == {"inner": {"b": ""}, "kept": {"b": "\u00fe"}, "either": "\u00fd"}
    assert body[-3] == 0  # `either` was written as its bytes branch


def test_decimal_zero_and_negative_come_back_exact() -> None:
    codec = avro_codec({"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 8})
    assert codec.decode(codec.encode(0)) == "0.00000000"
    assert codec.decode(codec.encode("-1.5")) == "-1.50000000"


def test_avro_body_that_is_not_of_the_schema_is_a_bad_payload() -> None:
    codec = avro_codec(ORDER, ADDRESS)
    body = codec.encode(ORDER_VALUE)
    with pytest.raises(BadPayload, match="not Avro of this schema"):
        codec.decode(body[:10])
    with pytest.raises(BadPayload):
        codec.decode(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")


# --- Protobuf -------------------------------------------------------------------------------------

PERSON_PROTO = """
syntax = "proto3";
package kctl_serde_test;
import "google/protobuf/timestamp.proto";

message Person {
  string name = 1;
  int64 id = 2;
  Address address = 3;
  repeated Address others = 4;
  map<string, int32> scores = 5;
  google.protobuf.Timestamp born = 6;
  Kind kind = 7;
  bytes blob = 8;
  string display_name = 9;
  message Address { string zip = 1; int32 number = 2; }
  enum Kind { HUMAN = 0; ROBOT = 1; }
}
message Other { string x = 1; message Deep { message Deeper { bool b = 1; } } }
"""


@pytest.fixture(scope="module")
def compiled(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[descriptor_pb2.FileDescriptorSet, ModuleType]]:
    """The schema as protoc compiles it: the FileDescriptorSet (with its imports) the registry's
    parser would give, and the Python module protoc generates, as a producer would use it."""
    import grpc_tools
    from grpc_tools import protoc

    directory = tmp_path_factory.mktemp("proto")
    (directory / "kctl_serde_test.proto").write_text(PERSON_PROTO)
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    arguments = ["protoc", f"-I{directory}", f"-I{include}", "--include_imports"]
    arguments += [f"--descriptor_set_out={directory / 'set.pb'}", f"--python_out={directory}"]
    assert protoc.main([*arguments, str(directory / "kctl_serde_test.proto")]) == 0
    files = descriptor_pb2.FileDescriptorSet.FromString((directory / "set.pb").read_bytes())
    spec = importlib.util.spec_from_file_location("kctl_serde_test_pb2", directory / "kctl_serde_test_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield files, module
    del sys.modules[spec.name]


PERSON_VALUE = {
    "name": "Ada",
    "id": "12345678901",
    "address": {"zip": "75001", "number": 3},
    "others": [{"zip": "1"}, {"number": 2}],
    "scores": {"maths": 20},
    "born": "1815-12-10T00:00:00Z",
    "kind": "ROBOT",
    "blob": "AAE=",
    "displayName": "A. Lovelace",  # the JSON name is taken as well as the .proto one
}


def test_protobuf_we_write_is_what_the_generated_class_reads(compiled: Any) -> None:
    files, module = compiled
    codec = ProtobufCodec(files)
    payload = frame(7, codec.encode(PERSON_VALUE, [0]), [0])

    theirs = ProtobufDeserializer(module.Person, {})(payload, CONTEXT)

    assert theirs.name == "Ada" and theirs.id == 12345678901 and theirs.display_name == "A. Lovelace"
    assert theirs.others[1].number == 2 and theirs.scores["maths"] == 20 and theirs.blob == b"\x00\x01"
    assert theirs.kind == module.Person.ROBOT and theirs.born.ToJsonString() == "1815-12-10T00:00:00Z"


def test_protobuf_decode_uses_proto_names_and_prints_defaults(compiled: Any) -> None:
    files, module = compiled
    codec = ProtobufCodec(files)
    decoded = codec.decode(codec.encode(PERSON_VALUE, [0]), [0])
    assert decoded["display_name"] == "A. Lovelace" and decoded["id"] == "12345678901"
    assert decoded["others"] == [{"zip": "1", "number": 0}, {"zip": "", "number": 2}]
    assert codec.decode(b"", [0]) == {
        "name": "",
        "id": "0",
        "others": [],
        "scores": {},
        "kind": "HUMAN",
        "blob": "",
        "display_name": "",
    }
    assert codec.decode(codec.encode(decoded, [0]), [0]) == decoded


def test_message_indexes_match_confluent_kafkas(compiled: Any) -> None:
    files, module = compiled
    codec = ProtobufCodec(files)
    for generated in (module.Person, module.Person.Address, module.Other, module.Other.Deep.Deeper):
        indexes = codec.message_indexes(generated.DESCRIPTOR.full_name)
        assert indexes == _create_index_array(generated.DESCRIPTOR)
        assert codec.message_type(indexes).full_name == generated.DESCRIPTOR.full_name
    assert codec.message_indexes("kctl_serde_test.Other.Deep.Deeper") == [1, 0, 0]


def test_a_nested_message_round_trips_with_confluent_kafka_both_ways(compiled: Any) -> None:
    files, module = compiled
    codec = ProtobufCodec(files)
    indexes = codec.message_indexes("kctl_serde_test.Person.Address")
    ours = frame(3, codec.encode({"zip": "z", "number": 9}, indexes), indexes)
    assert ProtobufDeserializer(module.Person.Address, {})(ours, CONTEXT) == module.Person.Address(
        zip="z", number=9
    )

    registry = MockSchemaRegistryClient({"url": "mock://"})
    serializer = ProtobufSerializer(module.Person.Address, registry, {"use.deprecated.format": False})
    schema_id, their_indexes, body = unframe(
        serializer(module.Person.Address(zip="q"), CONTEXT), protobuf=True
    )
    assert their_indexes == indexes == [0, 1]  # [0, 0] is Person.ScoresEntry, the map's entry type
    assert codec.decode(body, their_indexes) == {"zip": "q", "number": 0}


@pytest.mark.parametrize(
    ("value", "field", "reason"),
    [
        ({"address": {"zip": 75001}}, "/address/zip", "expected string"),
        ({"others": [{"zip": "1"}, {"number": "two"}]}, "/others/1/number", "invalid literal for int()"),
        (
            {"others": [{"zip": "1"}, {"zap": 1}]},
            "/others/1/zap",
            "not a field of message kctl_serde_test.Person.Address",
        ),
        ({"scores": {"maths": 1, "art": "x"}}, "/scores/art", "invalid literal for int()"),
        ({"nmae": "x"}, "/nmae", "not a field of message kctl_serde_test.Person"),
        ({"born": "yesterday"}, "/born", "Failed to parse timestamp"),
        ({"kind": "ALIEN"}, "/kind", "Invalid enum value ALIEN for enum type kctl_serde_test.Person.Kind"),
        ({"id": 2**64}, "/id", "out of range"),
        ({"others": {"zip": "1"}}, "/others", "repeated field others must be in []"),
        (["Ada"], "/", "expected an object (message kctl_serde_test.Person), got an array"),
    ],
)
def test_protobuf_misfits_name_the_field_path(compiled: Any, value: Any, field: str, reason: str) -> None:
    with pytest.raises(RecordDoesNotFit) as raised:
        ProtobufCodec(compiled[0]).encode(value, [0])
    assert raised.value.field == field
    assert reason in raised.value.reason


def test_protobuf_bad_bodies_and_bad_indexes(compiled: Any) -> None:
    codec = ProtobufCodec(compiled[0])
    with pytest.raises(BadPayload, match="not readable as kctl_serde_test.Person"):
        codec.decode(b"\x0a\xff\xff\xff\xff\x0f", [0])
    with pytest.raises(NoSuchMessage, match=r"message indexes \[2\]: kctl_serde_test.proto has 2 messages"):
        codec.message_class([2])
    with pytest.raises(NoSuchMessage, match=r"kctl_serde_test.Other.Deep has 1 messages"):
        codec.message_class([1, 0, 5])
    with pytest.raises(NoSuchMessage, match="no message kctl_serde_test.Nobody"):
        codec.message_indexes("kctl_serde_test.Nobody")
    with pytest.raises(NoSuchMessage, match="is in google/protobuf/timestamp.proto"):
        codec.message_indexes("google.protobuf.Timestamp")


def test_a_descriptor_set_in_any_order_loads(compiled: Any) -> None:
    files = descriptor_pb2.FileDescriptorSet()
    files.file.extend(reversed(compiled[0].file))  # the schema's file before its import
    codec = ProtobufCodec(files, file_name="kctl_serde_test.proto")
    assert codec.decode(codec.encode({"name": "x"}, [0]), [0])["name"] == "x"


# --- JSON Schema ----------------------------------------------------------------------------------

CUSTOMER = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "address": {"$ref": "address.json"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
    "additionalProperties": False,
}
ADDRESS_JSON = {
    "$id": "https://example.com/address.json",
    "type": "object",
    "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
    "required": ["zip"],
}


def json_codec(schema: Any, references: Mapping[str, Any] = {}) -> JsonSchemaCodec:
    texts = {name: json.dumps(document) for name, document in references.items()}
    return JsonSchemaCodec(schemas.parse("JSON", json.dumps(schema), texts).parsed.validator)


def test_json_schema_body_is_compact_utf8_that_confluent_kafka_reads() -> None:
    codec = json_codec(CUSTOMER, {"address.json": ADDRESS_JSON})
    value = {"name": "Zoë", "age": 30, "address": {"zip": "75001"}, "tags": ["a"]}
    body = codec.encode(value)
    assert body == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    assert codec.decode(body) == value
    inline = {**CUSTOMER, "properties": {**CUSTOMER["properties"], "address": {"type": "object"}}}
    deserializer = JSONDeserializer(json.dumps(inline))
    assert deserializer(frame(5, body), CONTEXT) == value


@pytest.mark.parametrize(
    ("value", "field", "reason"),
    [
        ({"name": "x", "address": {"zip": "7500"}}, "/address/zip", "does not match '^[0-9]{5}$'"),
        ({"name": "x", "address": {}}, "/address", "'zip' is a required property"),
        ({"name": "x", "tags": ["a", 2]}, "/tags/1", "2 is not of type 'string'"),
        ({"name": "x", "age": -1}, "/age", "-1 is less than the minimum of 0"),
        ({"name": "x", "nmae": 1}, "/", "Additional properties are not allowed ('nmae' was unexpected)"),
        ({}, "/", "'name' is a required property"),
    ],
)
def test_json_schema_misfits_name_the_field_path(value: Any, field: str, reason: str) -> None:
    with pytest.raises(RecordDoesNotFit) as raised:
        json_codec(CUSTOMER, {"address.json": ADDRESS_JSON}).encode(value)
    assert (raised.value.field, reason in raised.value.reason) == (field, True), raised.value.reason


def test_a_number_json_cannot_write_does_not_fit() -> None:
    with pytest.raises(RecordDoesNotFit, match="field /: Out of range float values are not JSON compliant"):
        json_codec({"type": "number"}).encode(float("nan"))


def test_json_schema_validator_follows_dollar_schema_draft_7_by_default() -> None:
    tuple_items = {"type": "array", "prefixItems": [{"type": "integer"}], "items": False}
    latest = json_codec({"$schema": "https://json-schema.org/draft/2020-12/schema", **tuple_items})
    assert latest.encode([1]) == b"[1]"
    with pytest.raises(RecordDoesNotFit, match="field /: Expected at most 1 item"):
        latest.encode([1, 2])  # 2020-12: items false after prefixItems: no more items
    with pytest.raises(RecordDoesNotFit):
        json_codec(tuple_items).encode([1])  # draft 7: `items: false` allows no item at all


def test_json_body_that_is_not_json_is_a_bad_payload() -> None:
    with pytest.raises(BadPayload, match="not UTF-8 JSON"):
        json_codec(True).decode(b"\xff{")


# --- registered schemas: Encoder and decode over schemas.parse ------------------------------------


def test_encoder_frames_avro_with_its_id_and_decode_reads_it_back() -> None:
    parsed = schemas.parse("AVRO", json.dumps(ORDER), {"com.acme.Address": json.dumps(ADDRESS)})
    payload = Encoder(7, parsed).encode(ORDER_VALUE)
    schema_id, indexes, body = unframe(payload)
    assert (schema_id, indexes) == (7, None)
    assert decode(parsed, None, body)["address"] == ORDER_VALUE["address"]
    with pytest.raises(RecordDoesNotFit, match="field /count:"):
        Encoder(7, parsed).encode({**ORDER_VALUE, "count": "3"})


def test_encoder_for_a_protobuf_message_by_name_with_an_imported_file() -> None:
    address = 'syntax = "proto3";\npackage geo;\nmessage Address { string zip = 1; }\n'
    person = (
        'syntax = "proto3";\npackage people;\nimport "geo/address.proto";\n'
        "message Team { repeated Person members = 1; }\n"
        "message Person { string name = 1; geo.Address address = 2; message Pet { string name = 1; } }\n"
    )
    parsed = schemas.parse("PROTOBUF", person, {"geo/address.proto": address})

    first = Encoder(9, parsed).encode({"members": [{"name": "Ada", "address": {"zip": "75001"}}]})
    assert unframe(first, protobuf=True)[:2] == (9, [0])
    pet = Encoder(9, parsed, message_name="people.Person.Pet")
    schema_id, indexes, body = unframe(pet.encode({"name": "Rex"}), protobuf=True)
    assert (schema_id, indexes) == (9, [1, 0])
    assert decode(parsed, indexes, body) == {"name": "Rex"}
    assert decode(parsed, [0], unframe(first, protobuf=True)[2]) == {
        "members": [{"name": "Ada", "address": {"zip": "75001"}}]
    }
    with pytest.raises(RecordDoesNotFit, match="field /members/0/address/zip:"):
        Encoder(9, parsed).encode({"members": [{"address": {"zip": 1}}]})


def test_a_protobuf_message_name_must_be_in_the_schemas_own_file() -> None:
    parsed = schemas.parse("PROTOBUF", 'syntax = "proto3";\nmessage A { int32 x = 1; }\n')
    with pytest.raises(NoSuchMessage, match="no message B"):
        Encoder(1, parsed, message_name="B")
    with pytest.raises(NoSuchMessage, match="for Protobuf schemas, not AVRO"):
        Encoder(1, schemas.parse("AVRO", '"string"'), message_name="A")


def test_decode_with_message_indexes_the_schema_lacks_is_a_bad_payload() -> None:
    parsed = schemas.parse("PROTOBUF", 'syntax = "proto3";\nmessage A { int32 x = 1; }\n')
    with pytest.raises(BadPayload, match=r"message indexes \[3\]"):
        decode(parsed, [3], b"")
    assert decode(parsed, None, b"\x08\x05") == {"x": 5}


def test_encoder_for_json_schema_and_its_confluent_framing() -> None:
    parsed = schemas.parse("JSON", json.dumps(CUSTOMER), {"address.json": json.dumps(ADDRESS_JSON)})
    payload = Encoder(11, parsed).encode({"name": "x", "address": {"zip": "75001"}})
    assert payload == b'\x00\x00\x00\x00\x0b{"name":"x","address":{"zip":"75001"}}'
    assert decode(parsed, None, unframe(payload)[2]) == {"name": "x", "address": {"zip": "75001"}}


def test_a_schema_is_compiled_once_whatever_uses_it() -> None:
    parsed = schemas.parse("AVRO", json.dumps(ORDER), {"com.acme.Address": json.dumps(ADDRESS)})
    assert codec_for(parsed) is codec_for(parsed)
    same_text = schemas.parse("AVRO", json.dumps(ORDER), {"com.acme.Address": json.dumps(ADDRESS)})
    assert codec_for(same_text) is not codec_for(parsed)  # another object, maybe other references


def test_hostile_bodies_decode_to_json_or_raise_bad_payload() -> None:
    """Random bytes, and valid bodies with bytes changed, as a topic anyone writes may hold."""
    randomly = random.Random(5)
    avro = schemas.parse("AVRO", json.dumps(ORDER), {"com.acme.Address": json.dumps(ADDRESS)})
    protobuf = schemas.parse("PROTOBUF", PERSON_PROTO)
    valid = {
        avro: unframe(Encoder(1, avro).encode(ORDER_VALUE))[2],
        protobuf: unframe(Encoder(1, protobuf).encode(PERSON_VALUE), protobuf=True)[2],
        schemas.parse("JSON", "{}"): b'{"a": [1, 2.5, "x", null]}',
    }
    for parsed, body in valid.items():
        for attempt in range(1000):
            if attempt % 2:
                data = bytes(randomly.randrange(256) for _ in range(randomly.randrange(64)))
            else:
                changed = bytearray(body)
                for _ in range(3):
                    changed[randomly.randrange(len(changed))] = randomly.randrange(256)
                data = bytes(changed)
            try:
                json.dumps(decode(parsed, [0] if parsed is protobuf else None, data))
            except BadPayload:
                pass


def test_values_nested_deeper_than_python_recurses_do_not_fit() -> None:
    deep: Any = None
    for _ in range(5000):
        deep = {"next": deep}
    linked = {
        "type": "record",
        "name": "L",
        "fields": [{"name": "next", "type": ["null", "L"]}],
    }
    nested_message = 'syntax = "proto3";\nmessage L { L next = 1; }\n'
    for parsed in (
        schemas.parse("AVRO", json.dumps(linked)),
        schemas.parse("PROTOBUF", nested_message),
        schemas.parse("JSON", '{"properties": {"next": {"$ref": "#"}}}'),
    ):
        with pytest.raises(RecordDoesNotFit) as raised:
            Encoder(1, parsed).encode(deep)
        assert raised.value.field == "/", parsed.schema_type


def test_a_protobuf_any_of_a_type_the_schema_does_not_know() -> None:
    parsed = schemas.parse(
        "PROTOBUF",
        'syntax = "proto3";\nimport "google/protobuf/any.proto";\nmessage M { google.protobuf.Any a = 1; }',
    )
    unknown = b"\x0a\x21\x0a\x1dtype.googleapis.com/nope.Nope\x12\x00"
    with pytest.raises(BadPayload, match="not readable as M: Can not find message descriptor"):
        decode(parsed, [0], unknown)
    with pytest.raises(RecordDoesNotFit, match="field /a: Can not find message descriptor"):
        Encoder(1, parsed).encode({"a": {"@type": "type.googleapis.com/nope.Nope"}})
    known = Encoder(1, parsed).encode({"a": {"@type": "type.googleapis.com/M"}})
    assert decode(parsed, [0], unframe(known, protobuf=True)[2]) == {"a": {"@type": "type.googleapis.com/M"}}
