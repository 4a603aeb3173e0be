"""JSON Schema in schemaregistry.schemas: metaschema checks, `$ref`s into references, the
canonical form, and compatibility as Confluent's SchemaDiff decides it (open and closed content
models, constraints relaxed or tightened, types widened, nested objects and array items), each
incompatible difference given with its JSON path."""

from __future__ import annotations

import json
import time

import pytest

from schemaregistry import schemas
from schemaregistry.schemas import InvalidSchema, ParsedSchema, compatibility_messages, json_diff
from schemaregistry.schemas.json_diff import differences

pytestmark = pytest.mark.unit


def js(document: object, references: dict[str, str] | None = None) -> ParsedSchema:
    return schemas.parse("JSON", json.dumps(document), references or {})


def obj(properties: dict, **extra: object) -> dict:
    return {"type": "object", "properties": properties, **extra}


NAME = {"type": "string"}
NAME_WITH_DEFAULT = {"type": "string", "default": "anon"}
AGE = {"type": "integer"}
NICK = {"type": "string"}

# name optional, then required with a default, then required without one: each step is
# compatible both ways, the last is not with the first (a required property was added)
OPTIONAL, REQUIRED_WITH_DEFAULT = obj({"name": NAME}), obj({"name": NAME_WITH_DEFAULT}, required=["name"])
REQUIRED = obj({"name": NAME}, required=["name"])

# (level, earlier versions, compatible new, incompatible new, error type, path, failing version)
CASES = [
    (
        "BACKWARD",
        [obj({"name": NAME, "nick": NICK})],
        obj({"name": NAME}),  # a property removed from an open content model
        obj({"name": NAME, "nick": NICK, "age": AGE}),
        "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        "#/properties/age",
        1,
    ),
    (
        "BACKWARD_TRANSITIVE",
        [OPTIONAL, REQUIRED_WITH_DEFAULT],
        obj({"name": NAME_WITH_DEFAULT}, required=["name"], title="User"),
        REQUIRED,
        "REQUIRED_ATTRIBUTE_ADDED",
        "#/required/name",
        1,
    ),
    (
        "FORWARD",
        [obj({"name": NAME})],
        obj({"name": NAME, "age": AGE}),  # the old schema reads it: age falls in its open model
        obj({}),
        "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        "#/properties/name",
        1,
    ),
    (
        "FORWARD_TRANSITIVE",
        [REQUIRED, REQUIRED_WITH_DEFAULT],
        REQUIRED_WITH_DEFAULT,
        OPTIONAL,
        "REQUIRED_ATTRIBUTE_ADDED",
        "#/required/name",
        1,
    ),
    (
        "FULL",
        [obj({"name": NAME, "age": AGE})],
        obj({"name": NAME, "age": AGE}, description="a user"),
        obj({"name": NAME, "age": {"type": "string"}}),
        "TYPE_CHANGED",
        "#/properties/age",
        1,
    ),
    (
        "FULL_TRANSITIVE",
        [OPTIONAL, REQUIRED_WITH_DEFAULT],
        obj({"name": {"type": "string", "default": "x"}}, required=["name"]),
        REQUIRED,
        "REQUIRED_ATTRIBUTE_ADDED",
        "#/required/name",
        1,
    ),
]


def history(*versions: dict) -> list[tuple[int, ParsedSchema]]:
    return [(number, js(document)) for number, document in enumerate(versions, start=1)]


@pytest.mark.parametrize(
    ("level", "earlier", "compatible", "incompatible", "error", "path", "version"), CASES
)
def test_each_level_accepts_a_compatible_change_and_names_the_property_of_an_incompatible_one(
    level, earlier, compatible, incompatible, error, path, version
):
    previous = history(*earlier)
    assert compatibility_messages(level, js(compatible), previous) == []
    messages = compatibility_messages(level, js(incompatible), previous)
    assert messages[0].startswith(f'{{errorType:"{error}"')
    assert f"path '{path}'" in messages[0]
    assert f"{{oldSchemaVersion: {version}}}" in messages
    assert messages[-1] == f"{{validateFields: 'false', compatibility: '{level}'}}"


def test_none_accepts_anything():
    assert compatibility_messages("NONE", js({"type": "string"}), history(obj({"name": NAME}))) == []


def test_confluents_wording_of_a_property_added_to_an_open_content_model():
    messages = compatibility_messages(
        "BACKWARD", js(obj({"name": NAME, "age": AGE})), history(obj({"name": NAME}))
    )
    assert messages[0] == (
        '{errorType:"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", description:"The new schema has an open content '
        "model and has a property or item at path '#/properties/age' which is missing in the old schema\"}"
    )


CLOSED = {"additionalProperties": False}


@pytest.mark.parametrize(
    ("old", "new", "changes"),
    [
        # closed content model: an optional property may come, none may go, none required may come
        (obj({"name": NAME}, **CLOSED), obj({"name": NAME, "age": AGE}, **CLOSED), []),
        (
            obj({"name": NAME}, **CLOSED),
            obj({"name": NAME, "age": AGE}, required=["age"], **CLOSED),
            ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/age"],
        ),
        (
            obj({"name": NAME, "age": AGE}, **CLOSED),
            obj({"name": NAME}, **CLOSED),
            ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/age"],
        ),
        (obj({"name": NAME}, **CLOSED), obj({"name": NAME}), []),  # opened
        (
            obj({"name": NAME}),
            obj({"name": NAME}, **CLOSED),
            ["ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"],
        ),
        # types: widened, narrowed, changed, made nullable
        (obj({"n": {"type": "integer"}}), obj({"n": {"type": "number"}}), []),
        (obj({"n": {"type": "number"}}), obj({"n": {"type": "integer"}}), ["TYPE_NARROWED #/properties/n"]),
        (obj({"n": {"type": "string"}}), obj({"n": {"type": "boolean"}}), ["TYPE_CHANGED #/properties/n"]),
        (obj({"n": {"type": "string"}}), obj({"n": {"type": ["string", "null"]}}), []),
        (
            obj({"n": {"type": ["string", "null"]}}),
            obj({"n": {"type": "string"}}),
            ["TYPE_CHANGED #/properties/n"],
        ),
        # enums
        (obj({"c": {"enum": ["red"]}}), obj({"c": {"enum": ["red", "blue"]}}), []),
        (
            obj({"c": {"enum": ["red", "blue"]}}),
            obj({"c": {"enum": ["red"]}}),
            ["ENUM_ARRAY_NARROWED #/properties/c/enum"],
        ),
        (
            obj({"c": {"type": "string", "enum": ["red", "blue"]}}),
            obj({"c": {"type": "string", "enum": ["red"]}}),
            ["COMBINED_TYPE_SUBSCHEMAS_CHANGED #/properties/c"],  # type + enum is an allOf to Confluent
        ),
        # constraints: relaxed is compatible, tightened or added is not
        (obj({"s": {"type": "string", "maxLength": 5}}), obj({"s": {"type": "string", "maxLength": 9}}), []),
        (
            obj({"s": {"type": "string", "maxLength": 9}}),
            obj({"s": {"type": "string", "maxLength": 5}}),
            ["MAX_LENGTH_DECREASED #/properties/s/maxLength"],
        ),
        (
            obj({"s": {"type": "string"}}),
            obj({"s": {"type": "string", "minLength": 1}}),
            ["MIN_LENGTH_ADDED #/properties/s/minLength"],
        ),
        (obj({"s": {"type": "string", "pattern": "^a"}}), obj({"s": {"type": "string"}}), []),
        (
            obj({"x": {"type": "number", "minimum": 0}}),
            obj({"x": {"type": "number", "minimum": 1}}),
            ["MINIMUM_INCREASED #/properties/x/minimum"],
        ),
        (obj({"x": {"type": "number", "maximum": 1}}), obj({"x": {"type": "number", "maximum": 2}}), []),
        (
            obj({"x": {"type": "number", "multipleOf": 4}}),
            obj({"x": {"type": "number", "multipleOf": 2}}),
            [],
        ),
        (
            obj({"x": {"type": "number", "multipleOf": 0.5}}),
            obj({"x": {"type": "number", "multipleOf": 1.5}}),
            ["MULTIPLE_OF_EXPANDED #/properties/x/multipleOf"],
        ),
        (obj({}, maxProperties=3), obj({}, maxProperties=2), ["MAX_PROPERTIES_DECREASED #/maxProperties"]),
        # arrays and nested objects, recursively
        (
            obj({"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}),
            obj({"tags": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}}),
            ["TYPE_CHANGED #/properties/tags/items", "MAX_ITEMS_DECREASED #/properties/tags/maxItems"],
        ),
        (
            obj({"address": obj({"zip": {"type": "string"}})}),
            obj({"address": obj({"zip": {"type": "string"}, "city": {"type": "string"}})}),
            ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/address/properties/city"],
        ),
        # a pattern property covers a property that comes or goes
        (
            obj({"name": NAME}, patternProperties={"^x_": {"type": "string"}}, **CLOSED),
            obj(
                {"name": NAME, "x_1": {"type": "string"}},
                patternProperties={"^x_": {"type": "string"}},
                **CLOSED,
            ),
            [],
        ),
    ],
)
def test_backward_differences_follow_confluents_schema_diff(old, new, changes):
    messages = compatibility_messages("BACKWARD", js(new), history(old))
    found = [message for message in messages if message.startswith("{errorType")]
    assert [_type_and_path(message) for message in found] == changes


def _type_and_path(message: str) -> str:
    kind = message.split('"')[1]
    return f"{kind} {message.split(' path ')[1].split(chr(39))[1]}"


def test_compatible_differences_are_found_but_not_reported():
    found = differences(
        js(obj({"s": {"type": "string", "maxLength": 5}})), js(obj({"s": {"type": "string"}}))
    )
    assert found == [("MAX_LENGTH_REMOVED", "#/properties/s/maxLength")]


REFERENCED = {
    "$id": "http://example.com/address.json",
    "type": "object",
    "properties": {"zip": {"type": "string"}},
}


@pytest.mark.parametrize("ref", ["address.json", "http://example.com/address.json"])
def test_a_ref_is_resolved_by_the_reference_name_relative_to_the_id_or_absolute(ref):
    customer = {"$id": "http://example.com/customer.json", **obj({"home": {"$ref": ref}})}
    parsed = js(customer, {"address.json": json.dumps(REFERENCED)})
    assert parsed.parsed.validator.is_valid({"home": {"zip": "1011"}})
    assert not parsed.parsed.validator.is_valid({"home": {"zip": 1011}})


def test_a_change_in_a_referenced_schema_is_found_at_the_referring_property():
    customer = json.dumps(obj({"home": {"$ref": "address.json"}}))
    old = schemas.parse("JSON", customer, {"address.json": json.dumps(REFERENCED)})
    changed = {**REFERENCED, "properties": {"zip": {"type": "integer"}}}
    new = schemas.parse("JSON", customer, {"address.json": json.dumps(changed)})
    messages = compatibility_messages("BACKWARD", new, [(1, old)])
    assert "'#/properties/home/properties/zip'" in messages[0]


def test_a_recursive_schema_is_compared_without_end():
    def tree(value_type: str) -> ParsedSchema:
        return js(obj({"value": {"type": value_type}, "children": {"type": "array", "items": {"$ref": "#"}}}))

    assert compatibility_messages("FULL", tree("integer"), [(1, tree("integer"))]) == []
    assert (
        "'#/properties/value'"
        in compatibility_messages("BACKWARD", tree("integer"), [(1, tree("number"))])[0]
    )


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"type": "strin"}, r"at \$.type"),
        ({"properties": {"a": {"minLength": -1}}}, "minLength"),
        ({"pattern": "(("}, "regex"),
        (["not", "a", "schema"], "an object or a boolean"),
        ({"properties": {"a": {"$ref": "missing.json"}}}, "'missing.json' cannot be resolved"),
        (
            {"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/a"}}},
            "refers only to itself",
        ),
        (
            {"$ref": "#/definitions/a/enum/0", "definitions": {"a": {"enum": [1]}}},
            "does not lead to a schema",
        ),
    ],
)
def test_a_malformed_schema_is_refused_with_the_reason(document, reason):
    with pytest.raises(InvalidSchema, match=reason):
        js(document)


def test_text_that_is_not_json_is_refused():
    with pytest.raises(InvalidSchema, match="not valid JSON"):
        schemas.parse("JSON", '{"type": ')


@pytest.mark.parametrize(
    "dialect",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ],
)
def test_each_draft_is_checked_against_its_own_metaschema(dialect):
    assert js({"$schema": dialect, **obj({"a": {"type": "string"}})}).schema_type == "JSON"
    with pytest.raises(InvalidSchema):
        js({"$schema": dialect, "type": 12})


def test_the_canonical_form_ignores_whitespace_and_key_order():
    one = schemas.parse("JSON", '{"type": "object", "properties": {"a": {"type": "string"}}}')
    two = schemas.parse("JSON", '{ "properties" : { "a" : { "type" : "string" } },\n "type" : "object" }')
    assert one.canonical == two.canonical != js(obj({"a": {"type": "integer"}})).canonical


def test_hostile_schemas_are_refused_or_cut_short(monkeypatch):
    with pytest.raises(InvalidSchema, match="nested deeper than 64 levels"):
        schemas.parse("JSON", '{"not": ' * 100 + "{}" + "}" * 100)

    def nest(depth: int) -> dict:
        leaf = {"type": "string"}
        return leaf if depth == 0 else {"anyOf": [{**nest(depth - 1), "title": str(i)} for i in range(6)]}

    monkeypatch.setattr(json_diff, "MAX_COMPARISONS", 2_000)
    started = time.monotonic()
    messages = compatibility_messages("BACKWARD", js(nest(4)), [(1, js(nest(4)))])
    assert time.monotonic() - started < 10
    assert messages[0].startswith(
        "The schemas cannot be compared: comparing the JSON schemas takes more than 2000"
    )
    # a chain of $refs nests without the text nesting
    chain = {f"d{i}": obj({"next": {"$ref": f"#/definitions/d{i + 1}"}}) for i in range(100)}
    chained = js({"$ref": "#/definitions/d0", "definitions": {**chain, "d100": {"type": "string"}}})
    assert "nest deeper than 64 levels" in compatibility_messages("FULL", chained, [(1, chained)])[0]


def test_a_pattern_property_is_matched_in_linear_time():
    # (a+)+$ backtracks exponentially in a backtracking engine on a near miss like this key
    patterns = {"patternProperties": {"(a+)+$": {"type": "string"}}, **CLOSED}
    new = obj({"name": NAME, "a" * 40 + "!": {"type": "string"}}, **patterns)
    started = time.monotonic()
    compatibility_messages("BACKWARD", js(new), history(obj({"name": NAME}, **patterns)))
    assert time.monotonic() - started < 5
