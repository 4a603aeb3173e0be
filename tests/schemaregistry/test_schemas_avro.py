"""Avro schemas in schemaregistry.schemas: parsing (fastavro and Avro's own checks), references,
the canonical form, and compatibility at each of Confluent's levels, worded as Confluent words
it (each message naming the field at fault). The level mechanics shared by all three types
(transitive order, FULL's two halves, NONE, a change of type) are tested here too."""

from __future__ import annotations

import io
import json
import time

import fastavro
import pytest

from schemaregistry import schemas
from schemaregistry.schemas import InvalidSchema, ParsedSchema, compatibility_messages

pytestmark = pytest.mark.unit


def record(*fields: dict, name: str = "User") -> ParsedSchema:
    return schemas.parse(
        "AVRO", json.dumps({"type": "record", "name": name, "namespace": "com.acme", "fields": fields})
    )


def field(name: str, type_: object, **extra: object) -> dict:
    return {"name": name, "type": type_, **extra}


NAME = field("name", "string")
AGE = field("age", "int")
AGE_DEFAULT = field("age", "int", default=0)
NICK = field("nick", "string")
NICK_DEFAULT = field("nick", "string", default="")

# (level, earlier versions oldest first, compatible new schema, incompatible new schema, the
# error type and field the incompatible one's first message is about, the version it fails)
CASES = [
    ("BACKWARD", [[NAME]], [NAME, AGE_DEFAULT], [NAME, AGE], "READER_FIELD_MISSING_DEFAULT_VALUE", "age", 1),
    # v3 reads v2's data (age has a default there) but not v1's
    (
        "BACKWARD_TRANSITIVE",
        [[NAME], [NAME, AGE_DEFAULT]],
        [NAME, AGE_DEFAULT, NICK_DEFAULT],
        [NAME, AGE_DEFAULT, NICK],
        "READER_FIELD_MISSING_DEFAULT_VALUE",
        "nick",
        2,
    ),
    ("FORWARD", [[NAME, NICK]], [NAME, NICK, AGE], [NAME], "READER_FIELD_MISSING_DEFAULT_VALUE", "nick", 1),
    # v2's reader has a default for nick, v1's has not
    (
        "FORWARD_TRANSITIVE",
        [[NAME, NICK], [NAME, NICK_DEFAULT]],
        [NAME, NICK, AGE],
        [NAME],
        "READER_FIELD_MISSING_DEFAULT_VALUE",
        "nick",
        1,
    ),
    (
        "FULL",
        [[NAME, AGE]],
        [NAME, AGE, NICK_DEFAULT],
        [NAME, field("age", "string")],
        "TYPE_MISMATCH",
        "age",
        1,
    ),
    (
        "FULL_TRANSITIVE",
        [[NAME, NICK], [NAME, NICK_DEFAULT]],
        [NAME, NICK_DEFAULT, AGE_DEFAULT],
        [NAME],
        "READER_FIELD_MISSING_DEFAULT_VALUE",
        "nick",
        1,
    ),
]


def history(*versions: list[dict]) -> list[tuple[int, ParsedSchema]]:
    return [(number, record(*fields)) for number, fields in enumerate(versions, start=1)]


@pytest.mark.parametrize(
    ("level", "earlier", "compatible", "incompatible", "error", "name", "version"), CASES
)
def test_each_level_accepts_a_compatible_change_and_names_the_field_of_an_incompatible_one(
    level, earlier, compatible, incompatible, error, name, version
):
    previous = history(*earlier)
    assert compatibility_messages(level, record(*compatible), previous) == []
    messages = compatibility_messages(level, record(*incompatible), previous)
    assert f"errorType:'{error}'" in messages[0]
    assert f"'{name}'" in messages[0]
    assert f"{{oldSchemaVersion: {version}}}" in messages
    assert messages[-1] == f"{{validateFields: 'false', compatibility: '{level}'}}"


def test_none_accepts_anything():
    assert compatibility_messages("NONE", record(field("name", "int")), history([NAME])) == []


def test_confluents_wording_of_a_missing_default():
    messages = compatibility_messages("BACKWARD", record(NAME, AGE), history([NAME]))
    old = json.dumps({"type": "record", "name": "User", "namespace": "com.acme", "fields": [NAME]})
    assert messages == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'age' at path '/fields/1' "
        "in the new schema has no default value and is missing in the old schema', additionalInfo:'age'}",
        "{oldSchemaVersion: 1}",
        f"{{oldSchema: '{old}'}}",
        "{validateFields: 'false', compatibility: 'BACKWARD'}",
    ]


def test_forward_swaps_the_schemas_in_the_wording():
    messages = compatibility_messages("FORWARD", record(NAME), history([NAME, NICK]))
    assert "in the old schema has no default value and is missing in the new schema" in messages[0]


def test_full_reports_the_forward_half_without_the_old_schema_then_the_backward_half_with_it():
    messages = compatibility_messages("FULL", record(NAME, AGE), history([NAME, NICK]))
    kinds = [message.split(",")[0] for message in messages]
    assert kinds == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'",  # old reader: nick missing
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'",  # new reader: age missing
        "{oldSchemaVersion: 1}",
        kinds[3],
        "{validateFields: 'false'",
    ]
    assert "'nick'" in messages[0] and "'age'" in messages[1]
    assert messages[3].startswith("{oldSchema: '")


def test_non_transitive_levels_check_the_latest_version_only():
    previous = history([NAME, NICK], [NAME, NICK_DEFAULT])
    assert compatibility_messages("FORWARD", record(NAME), previous) == []


def test_transitive_levels_report_the_newest_version_that_fails_and_stop_there():
    previous = history([NAME, field("nick", "int")], [NAME, NICK], [NAME, NICK_DEFAULT])
    messages = compatibility_messages("FORWARD_TRANSITIVE", record(NAME), previous)
    assert "{oldSchemaVersion: 2}" in messages
    assert "{oldSchemaVersion: 1}" not in messages


def test_no_earlier_version_is_compatible():
    assert compatibility_messages("FULL_TRANSITIVE", record(NAME), []) == []


def test_a_change_of_schema_type_is_incompatible():
    json_schema = schemas.parse("JSON", '{"type": "object"}')
    messages = compatibility_messages("BACKWARD", json_schema, history([NAME]))
    assert messages[0] == "Incompatible because of different schema type: JSON after AVRO (version 1)"


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="SIDEWAYS"):
        compatibility_messages("SIDEWAYS", record(NAME), history([NAME]))


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        (field("n", "int"), field("n", "long"), None),  # promotions
        (field("n", "long"), field("n", "double"), None),
        (field("n", "string"), field("n", "bytes"), None),
        (field("n", "long"), field("n", "int"), "TYPE_MISMATCH"),
        (field("n", "string"), field("n", ["null", "string"]), None),
        (field("n", ["null", "string", "int"]), field("n", ["null", "string"]), "MISSING_UNION_BRANCH"),
        (field("n", ["null", "string"]), field("n", "string"), "TYPE_MISMATCH"),
        (
            field("n", {"type": "enum", "name": "E", "symbols": ["A", "B"]}),
            field("n", {"type": "enum", "name": "E", "symbols": ["A"]}),
            "MISSING_ENUM_SYMBOLS",
        ),
        (
            field("n", {"type": "enum", "name": "E", "symbols": ["A", "B"]}),
            field("n", {"type": "enum", "name": "E", "symbols": ["A"], "default": "A"}),
            None,
        ),
        (
            field("n", {"type": "fixed", "name": "F", "size": 4}),
            field("n", {"type": "fixed", "name": "F", "size": 8}),
            "FIXED_SIZE_MISMATCH",
        ),
        (
            field("n", {"type": "fixed", "name": "F", "size": 4}),
            field("n", {"type": "fixed", "name": "G", "size": 4}),
            "NAME_MISMATCH",
        ),
        (
            field("n", {"type": "fixed", "name": "F", "size": 4}),
            field("n", {"type": "fixed", "name": "G", "size": 4, "aliases": ["F"]}),
            None,
        ),
        (
            field("n", {"type": "array", "items": "int"}),
            field("n", {"type": "array", "items": "string"}),
            "TYPE_MISMATCH",
        ),
        (field("n", {"type": "map", "values": "int"}), field("n", {"type": "map", "values": "long"}), None),
        (field("n", "string"), field("renamed", "string", aliases=["n"]), None),
    ],
)
def test_backward_changes_of_a_field_follow_avro_schema_resolution(old, new, error):
    messages = compatibility_messages("BACKWARD", record(NAME, new), history([NAME, old]))
    if error is None:
        assert messages == []
    else:
        assert messages[0].startswith(f"{{errorType:'{error}'")
        assert "'n'" in messages[0] or "'renamed'" in messages[0]


def test_a_nested_field_is_named_by_its_path_of_field_names():
    def address(zip_type: str) -> dict:
        return field("address", {"type": "record", "name": "Address", "fields": [field("zip", zip_type)]})

    messages = compatibility_messages(
        "BACKWARD", record(NAME, address("int")), history([NAME, address("string")])
    )
    assert "path '/fields/1/type/fields/0/type') of field 'address.zip'" in messages[0]


def test_a_recursive_schema_is_checked_without_end():
    def linked(value_type: str) -> ParsedSchema:
        fields = [field("value", value_type), field("next", ["null", "Node"], default=None)]
        return record(*fields, name="Node")

    assert compatibility_messages("FULL", linked("int"), [(1, linked("int"))]) == []
    messages = compatibility_messages("BACKWARD", linked("int"), [(1, linked("long"))])
    assert "field 'value'" in messages[0]


def test_a_huge_union_is_cut_short_rather_than_checked_for_long():
    union = json.dumps(
        [{"type": "record", "name": f"R{i}", "fields": [field("f", "int")]} for i in range(1000)]
    )
    other = json.dumps(
        [{"type": "record", "name": f"S{i}", "fields": [field("f", "int")]} for i in range(1000)]
    )
    started = time.monotonic()
    messages = compatibility_messages(
        "BACKWARD", schemas.parse("AVRO", other), [(1, schemas.parse("AVRO", union))]
    )
    assert time.monotonic() - started < 10
    assert messages[0].startswith(
        "The schemas cannot be compared: comparing the Avro schemas takes more than"
    )


def test_a_bare_primitive_is_a_schema():
    parsed = schemas.parse("AVRO", '"string"')
    assert parsed.schema_type == "AVRO" and parsed.canonical == '"string"'


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "Empty schema"),
        ('{"type": "record", "name": "User", "fields": [', "not valid JSON"),
        ('{"type": "record", "name": "User", "fields": [{"name": "a", "type": "strin"}]}', "strin"),
        (
            '{"type": "record", "name": "User", "fields": [{"name": "a", "type": "int", "default": "x"}]}',
            "Default value",
        ),
        ('{"type": "record", "name": "1User", "fields": []}', "1User"),
        (json.dumps({"type": "record", "name": "U", "fields": [field("a", "int"), field("a", "int")]}), "a"),
        ('["null", "null"]', "null"),
        ('{"type": "fixed", "name": "F"}', "size"),
        ('{"type": "enum", "name": "E", "symbols": ["A", "A"]}', "unique"),
    ],
)
def test_a_malformed_schema_is_refused_with_the_reason(text, reason):
    with pytest.raises(InvalidSchema, match=reason):
        schemas.parse("AVRO", text)


def test_hostile_sizes_and_nesting_are_refused_before_parsing():
    with pytest.raises(InvalidSchema, match="more than the 1048576 allowed"):
        schemas.parse("AVRO", json.dumps("x" * (1 << 20)))
    with pytest.raises(InvalidSchema, match="nested deeper than 64 levels"):
        schemas.parse("AVRO", "[" * 100_000 + "]" * 100_000)


ADDRESS = json.dumps(
    {"type": "record", "name": "Address", "namespace": "com.acme", "fields": [field("zip", "string")]}
)
COUNTRY = json.dumps({"type": "enum", "name": "Country", "namespace": "com.acme", "symbols": ["NL", "FR"]})
LOCATED = json.dumps(
    {
        "type": "record",
        "name": "Location",
        "namespace": "com.acme",
        "fields": [field("address", "Address"), field("country", "Country")],
    }
)


def test_named_types_come_from_the_references_in_any_order():
    user = json.dumps(
        {
            "type": "record",
            "name": "User",
            "namespace": "com.acme",
            "fields": [NAME, field("at", "com.acme.Location")],
        }
    )
    # Location uses the other two: given first, it is defined once they are
    references = {"com.acme.Location": LOCATED, "com.acme.Address": ADDRESS, "com.acme.Country": COUNTRY}
    parsed = schemas.parse("AVRO", user, references)
    value = {"name": "Ann", "at": {"address": {"zip": "1011"}, "country": "NL"}}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed.parsed.fastavro, value)
    out.seek(0)
    assert fastavro.schemaless_reader(out, parsed.parsed.fastavro, None) == value


def test_a_type_no_reference_defines_is_refused():
    user = json.dumps({"type": "record", "name": "User", "fields": [field("at", "com.acme.Address")]})
    with pytest.raises(InvalidSchema, match="com.acme.Address"):
        schemas.parse("AVRO", user)
    with pytest.raises(InvalidSchema, match="reference 'com.acme.Location'"):
        schemas.parse("AVRO", user, {"com.acme.Location": LOCATED})


def test_a_change_in_a_referenced_type_is_found():
    user = json.dumps(
        {"type": "record", "name": "User", "namespace": "com.acme", "fields": [field("home", "Address")]}
    )
    old = schemas.parse("AVRO", user, {"com.acme.Address": ADDRESS})
    changed = ADDRESS.replace('"string"', '"int"')
    new = schemas.parse("AVRO", user, {"com.acme.Address": changed})
    assert "field 'home.zip'" in compatibility_messages("BACKWARD", new, [(1, old)])[0]


def test_the_canonical_form_ignores_whitespace_and_key_order():
    one = schemas.parse(
        "AVRO", '{"type": "record", "name": "User", "fields": [{"name": "a", "type": "int"}]}'
    )
    two = schemas.parse(
        "AVRO", '{\n  "fields": [{"type": "int", "name": "a"}],\n  "name": "User", "type": "record"\n}'
    )
    other = schemas.parse(
        "AVRO", '{"type": "record", "name": "User", "fields": [{"name": "a", "type": "long"}]}'
    )
    assert one.canonical == two.canonical != other.canonical
    assert two.text.startswith('{\n  "fields"')  # kept as registered
