"""Protobuf schemas in schemaregistry.schemas: .proto text and base64 FileDescriptorProtos
compiled by protoc, imports from references and well-known files, the FileDescriptorSet and
serialized forms, the canonical form, and compatibility as Confluent's SchemaDiff decides it,
each incompatible difference naming its message and field."""

from __future__ import annotations

import base64
import threading
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, timestamp_pb2
from grpc_tools import protoc

from schemaregistry import schemas
from schemaregistry.schemas import InvalidSchema, ParsedSchema, compatibility_messages

pytestmark = pytest.mark.unit

WELL_KNOWN = Path(protoc.__file__).parent / "_proto" / "google" / "protobuf"


def proto(body: str, references: dict[str, str] | None = None, syntax: str = "proto3") -> ParsedSchema:
    return schemas.parse("PROTOBUF", f'syntax = "{syntax}";\npackage acme;\n{body}\n', references or {})


def history(*bodies: str, syntax: str = "proto3") -> list[tuple[int, ParsedSchema]]:
    return [(number, proto(body, syntax=syntax)) for number, body in enumerate(bodies, start=1)]


WITH_QTY = "message Order { string id = 1; int32 qty = 2; }"
WITHOUT_QTY = "message Order { string id = 1; }"
QTY_AS_STRING = "message Order { string id = 1; string qty = 2; }"

# (level, earlier versions, compatible new, incompatible new, error type, path and field,
# failing version). qty dropped then brought back as a string: fine against the version
# without it, not against the one where it was an int32.
CASES = [
    (
        "BACKWARD",
        [WITH_QTY],
        "message Order { string id = 1; int32 qty = 2; string note = 3; }",
        QTY_AS_STRING,
        "FIELD_SCALAR_KIND_CHANGED",
        "#/Order/2' (field 'qty')",
        1,
    ),
    (
        "BACKWARD_TRANSITIVE",
        [WITH_QTY, WITHOUT_QTY],
        "message Order { string id = 1; string note = 3; }",
        QTY_AS_STRING,
        "FIELD_SCALAR_KIND_CHANGED",
        "#/Order/2' (field 'qty')",
        1,
    ),
    (
        "FORWARD",
        [WITH_QTY],
        "message Order { string order_id = 1; int64 qty = 2; }",  # renamed; int32 -> int64 reads the same
        "message Order { string id = 1; int32 qty = 2; Order parent = 3; }\nmessage Extra { int32 x = 1; }",
        "MESSAGE_REMOVED",  # the old schema lacks a message the new one has
        "#/Extra'",
        1,
    ),
    (
        "FORWARD_TRANSITIVE",
        [WITH_QTY, WITHOUT_QTY],
        WITHOUT_QTY,
        QTY_AS_STRING,
        "FIELD_SCALAR_KIND_CHANGED",
        "#/Order/2' (field 'qty')",
        1,
    ),
    (
        "FULL",
        ["message Order { string id = 1; optional int32 qty = 2; }"],
        "message Order { string id = 1; optional int32 quantity = 2; bytes note = 3; }",
        "message Order { string id = 1; repeated int32 qty = 2; }",
        "FIELD_NUMERIC_LABEL_CHANGED",
        "#/Order/2' (field 'qty')",
        1,
    ),
    (
        "FULL_TRANSITIVE",
        [WITH_QTY, WITHOUT_QTY],
        "message Order { string id = 1; bytes note = 3; }",
        QTY_AS_STRING,
        "FIELD_SCALAR_KIND_CHANGED",
        "#/Order/2' (field 'qty')",
        1,
    ),
]


@pytest.mark.parametrize(("level", "earlier", "compatible", "incompatible", "error", "at", "version"), CASES)
def test_each_level_accepts_a_compatible_change_and_names_the_field_of_an_incompatible_one(
    level, earlier, compatible, incompatible, error, at, version
):
    previous = history(*earlier)
    assert compatibility_messages(level, proto(compatible), previous) == []
    messages = compatibility_messages(level, proto(incompatible), previous)
    assert messages[0].startswith(f'{{errorType:"{error}"')
    assert f"path '{at}" in messages[0]
    assert f"{{oldSchemaVersion: {version}}}" in messages
    assert messages[-1] == f"{{validateFields: 'false', compatibility: '{level}'}}"


def test_none_accepts_anything():
    assert compatibility_messages("NONE", proto(QTY_AS_STRING), history(WITH_QTY)) == []


def test_a_required_field_added_is_named_in_confluents_words():
    old = "message Order { required string id = 1; }"
    new = "message Order { required string id = 1; required string sku = 2; }"
    messages = compatibility_messages("BACKWARD", proto(new, syntax="proto2"), history(old, syntax="proto2"))
    description = (
        "A required field at path '#/Order/2' (field 'sku') in the new schema is missing in the old schema"
    )
    assert messages[0] == f'{{errorType:"REQUIRED_FIELD_ADDED", description:"{description}"}}'


@pytest.mark.parametrize(
    ("old", "new", "errors"),
    [
        ("message A { int32 x = 1; }", "message A { int64 x = 1; }", []),
        ("message A { string x = 1; }", "message A { bytes x = 1; }", []),
        ("message A { int32 x = 1; }\nenum E { E0 = 0; }", "message A { E x = 1; }\nenum E { E0 = 0; }", []),
        ("message A { int32 x = 1; }", "message A { int32 y = 1; }", []),  # renamed: numbers are on the wire
        ("message A { int32 x = 1; }", "message A { sint32 x = 1; }", ["FIELD_SCALAR_KIND_CHANGED #/A/1 x"]),
        (
            "message A { int32 x = 1; }",
            "message A { B x = 1; }\nmessage B {}",
            ["FIELD_KIND_CHANGED #/A/1 x"],
        ),
        (
            "message A { B x = 1; }\nmessage B {}",
            "message A { C x = 1; }\nmessage B {}\nmessage C {}",
            ["FIELD_NAMED_TYPE_CHANGED #/A/1 x"],
        ),
        ("message A {}\nmessage B {}", "message A {}", ["MESSAGE_REMOVED #/B"]),
        ("message A {}", "message A {}\nmessage B {}", []),
        (
            "message A { map<string, int32> m = 1; }",
            "message A { map<string, string> m = 1; }",
            ["FIELD_SCALAR_KIND_CHANGED #/A/1 m"],
        ),
        (
            "message A { oneof o { int32 x = 1; string y = 2; } }",
            "message A { oneof o { int32 x = 1; } }",
            ["ONEOF_FIELD_REMOVED #/A/o/2 y"],
        ),
        ("message A { int32 x = 1; }", "message A { oneof o { int32 x = 1; } }", []),
        (
            "message A { int32 x = 1; int32 y = 2; }",
            "message A { oneof o { int32 x = 1; int32 y = 2; } }",
            ["MULTIPLE_FIELDS_MOVED_TO_ONEOF #/A/o"],
        ),
        (
            "message A { message B { int32 x = 1; } B b = 1; }",
            "message A { message B { string x = 1; } B b = 1; }",
            ["FIELD_SCALAR_KIND_CHANGED #/A/B/1 x"],
        ),
        ("enum E { A = 0; B = 1; }", "enum E { A = 0; }", []),
    ],
)
def test_backward_differences_follow_confluents_schema_diff(old, new, errors):
    messages = compatibility_messages("BACKWARD", proto(new), history(old))
    found = [message for message in messages if message.startswith("{errorType")]
    assert [_summary(message) for message in found] == errors


def _summary(message: str) -> str:
    kind = message.split('"')[1]
    path = message.split("path '")[1].split("'")[0]
    name = message.split("(field '")[1].split("'")[0] if "(field '" in message else ""
    return f"{kind} {path} {name}".strip()


def test_a_package_change_is_incompatible():
    renamed = schemas.parse(
        "PROTOBUF", 'syntax = "proto3";\npackage other;\nmessage Order { string id = 1; }'
    )
    messages = compatibility_messages("BACKWARD", renamed, history(WITHOUT_QTY))
    assert messages[0].startswith('{errorType:"PACKAGE_CHANGED"')


MONEY = 'syntax = "proto3";\npackage acme.common;\nmessage Money { int64 units = 1; string currency = 2; }\n'
PRICE = 'import "acme/common/money.proto";\nmessage Price { acme.common.Money amount = 1; }'


def test_imports_come_from_the_references_by_import_path():
    parsed = proto(PRICE, {"acme/common/money.proto": MONEY})
    files = schemas.file_descriptor_set(parsed)
    assert [file.name for file in files.file] == ["acme/common/money.proto", "default.proto"]
    assert files.file[-1].message_type[0].field[0].type_name == ".acme.common.Money"


def test_a_change_in_an_imported_message_is_found_and_named():
    old = proto(PRICE, {"acme/common/money.proto": MONEY})
    new = proto(PRICE, {"acme/common/money.proto": MONEY.replace("string currency", "int32 currency")})
    messages = compatibility_messages("BACKWARD", new, [(1, old)])
    assert [_summary(message) for message in messages[:2]] == [
        "FIELD_SCALAR_KIND_CHANGED #/Money/2 currency",
        "FIELD_NAMED_TYPE_CHANGED #/Price/1 amount",
    ]


def test_well_known_imports_need_no_reference():
    parsed = proto(
        'import "google/protobuf/timestamp.proto";\nmessage Event { google.protobuf.Timestamp at = 1; }'
    )
    names = [file.name for file in schemas.file_descriptor_set(parsed).file]
    assert names == ["google/protobuf/timestamp.proto", "default.proto"]


def test_a_base64_file_descriptor_is_a_schema_like_its_proto_text():
    from_descriptor = schemas.parse(
        "PROTOBUF", base64.b64encode(timestamp_pb2.DESCRIPTOR.serialized_pb).decode()
    )
    from_text = schemas.parse("PROTOBUF", (WELL_KNOWN / "timestamp.proto").read_text(encoding="utf-8"))
    assert from_descriptor.canonical == from_text.canonical
    assert schemas.file_descriptor_set(from_descriptor).file[-1].message_type[0].name == "Timestamp"


def test_a_base64_descriptor_may_import_references_and_well_known_files():
    # what confluent-kafka's serializer registers: the file as compiled, its imports by name
    order = descriptor_pb2.FileDescriptorProto(
        name="shop/order.proto",
        package="shop",
        syntax="proto3",
        dependency=["acme/common/money.proto", "google/protobuf/timestamp.proto"],
    )
    message = order.message_type.add(name="Order")
    message.field.add(name="price", number=1, type=11, label=1, type_name=".acme.common.Money")
    message.field.add(name="at", number=2, type=11, label=1, type_name=".google.protobuf.Timestamp")
    text = base64.b64encode(order.SerializeToString()).decode()
    parsed = schemas.parse("PROTOBUF", text, {"acme/common/money.proto": MONEY})
    assert parsed.text == text
    assert [file.name for file in schemas.file_descriptor_set(parsed).file][-1] == "default.proto"


def test_serialized_is_base64_of_the_schemas_file_descriptor():
    parsed = proto(PRICE, {"acme/common/money.proto": MONEY})
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schemas.serialized(parsed)))
    assert file.package == "acme" and list(file.dependency) == ["acme/common/money.proto"]
    # registered back in that form, it is the same schema
    again = schemas.parse("PROTOBUF", schemas.serialized(parsed), {"acme/common/money.proto": MONEY})
    assert again.canonical == parsed.canonical


def test_the_canonical_form_ignores_whitespace_and_comments():
    one = proto("message Order { string id = 1; }")
    two = proto("// an order\nmessage Order {\n  string id = 1;  // its id\n}")
    assert one.canonical == two.canonical != proto("message Order { bytes id = 1; }").canonical


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('syntax = "proto3";\nmessage A { strin x = 1; }', r'default.proto:2:13: "strin" is not defined'),
        ('syntax = "proto3";\nmessage A { int32 x = 1 }', 'Expected ";"'),
        ('syntax = "proto3";\nimport "missing.proto";\nmessage A {}', "missing.proto: File not found"),
        ('syntax = "proto3";\npackage empty;', "contains no type definitions"),
        ('syntax = "proto3";\n' + "message M { " * 100 + "}" * 100, "recursion limit"),
    ],
)
def test_a_malformed_schema_is_refused_with_protocs_reason(text, reason):
    with pytest.raises(InvalidSchema, match=reason):
        schemas.parse("PROTOBUF", text)


def test_a_reference_name_that_leaves_the_source_tree_is_refused():
    with pytest.raises(InvalidSchema, match="not a valid import path"):
        proto(PRICE, {"../../etc/money.proto": MONEY})


def test_descriptors_nested_deeper_than_protoc_allows_are_refused():
    file = descriptor_pb2.FileDescriptorProto(name="deep.proto", syntax="proto3")
    message = file.message_type.add(name="M0")
    for depth in range(1, 70):
        message = message.nested_type.add(name=f"M{depth}")
    with pytest.raises(InvalidSchema, match="recursion limit"):
        schemas.parse("PROTOBUF", base64.b64encode(file.SerializeToString()).decode())


def test_protoc_errors_stay_off_stderr_and_with_their_own_schema(capfd):
    results: dict[int, str] = {}

    def parse(number: int) -> None:
        text = f'syntax = "proto3";\nmessage A{number} {{ {"strin" if number % 2 else "string"} x = 1; }}'
        try:
            results[number] = schemas.parse("PROTOBUF", text).parsed.file.message_type[0].name
        except InvalidSchema as error:
            results[number] = str(error)

    threads = [threading.Thread(target=parse, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {number: results[number] for number in range(0, 8, 2)} == {n: f"A{n}" for n in range(0, 8, 2)}
    assert all('"strin" is not defined' in results[number] for number in range(1, 8, 2))
    assert capfd.readouterr().err == ""


def test_a_descriptor_that_says_proto2_is_the_same_schema_as_text_that_does_not():
    file = descriptor_pb2.FileDescriptorProto(name="a.proto", syntax="proto2")
    file.message_type.add(name="A").field.add(name="x", number=1, type=5, label=1)  # optional int32
    from_descriptor = schemas.parse("PROTOBUF", base64.b64encode(file.SerializeToString()).decode())
    assert (
        from_descriptor.canonical
        == schemas.parse("PROTOBUF", "message A { optional int32 x = 1; }").canonical
    )
