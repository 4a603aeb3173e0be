"""JSON Schema documents: checked against their draft's metaschema (draft-07 when `$schema`
does not say), every `$ref` resolved once at registration, so that neither a validator nor
the compatibility checker meets a reference it cannot follow later."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import jsonschema
import referencing.jsonschema
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry, Specification
from referencing.exceptions import Unresolvable

from schemaregistry.schemas.model import InvalidSchema, ParsedSchema, load_json

if TYPE_CHECKING:
    from referencing._core import Resolver

# Keywords whose value is a schema, a list of schemas or a name -> schema map (every draft's).
SCHEMA_KEYWORDS = (
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
)
SCHEMA_LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "items", "prefixItems")
SCHEMA_MAP_KEYWORDS = (
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "dependencies",
    "dependentSchemas",
)


@dataclass(frozen=True)
class JsonParsed:
    """`schema` is the document; `validator` validates instances against it, its references
    included; `resolver` follows a `$ref` from the document's base URI."""

    schema: dict[str, Any] | bool
    validator: Validator
    resolver: Resolver[Any]
    specification: Specification[Any]


def parse(text: str, references: Mapping[str, str]) -> ParsedSchema:
    """A reference is found under its name, taken as a URI as is and relative to the
    document's `$id` (Confluent registers each under its name)."""
    document = load_json(text, "the schema")
    if not isinstance(document, dict | bool):
        raise InvalidSchema("a JSON Schema must be an object or a boolean")
    validator_class = validator_for(document, default=jsonschema.Draft7Validator)
    _check_against_metaschema(validator_class, document, "the schema")
    specification = referencing.jsonschema.specification_with(
        validator_class.META_SCHEMA["$schema"], default=referencing.jsonschema.DRAFT7
    )
    base = document.get("$id") if isinstance(document, dict) else None
    base = base if isinstance(base, str) else ""
    registry: Registry[Any] = Registry()
    for name, referenced_text in references.items():
        referenced = load_json(referenced_text, f"reference '{name}'")
        resource = specification.create_resource(referenced)
        registry = registry.with_resources([(name, resource), (urljoin(base, name), resource)])
    registry = registry.with_resource(base, specification.create_resource(document))
    resolver = registry.resolver(base_uri=base)
    _check_references(document, resolver, specification)
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    validator = validator_class(document, registry=registry)
    return ParsedSchema("JSON", text, canonical, JsonParsed(document, validator, resolver, specification))


def _check_against_metaschema(validator_class: type[Validator], document: object, what: str) -> None:
    try:
        validator_class.check_schema(document)
    except jsonschema.SchemaError as exc:
        raise InvalidSchema(
            f"{what} does not follow its metaschema at {exc.json_path}: {exc.message}"
        ) from None
    except RecursionError:
        raise InvalidSchema(f"{what} is nested too deeply") from None


def _check_references(document: object, resolver: Resolver[Any], specification: Specification[Any]) -> None:
    """Follow every `$ref` reachable from the document, into the references too, and refuse
    one that leads nowhere, to something that is not a schema, or only to itself."""
    seen: set[int] = set()
    pending: list[tuple[object, Resolver[Any]]] = [(document, resolver)]
    while pending:
        schema, scope = pending.pop()
        if id(schema) in seen or not isinstance(schema, dict):
            continue
        seen.add(id(schema))
        if isinstance(schema.get("$ref"), str):
            pending.append(follow(schema, scope))
        pending.extend((child, enter(child, scope, specification)) for child in subschemas(schema))


def enter(schema: object, scope: Resolver[Any], specification: Specification[Any]) -> Resolver[Any]:
    """The resolver inside `schema`, a subschema of the one `scope` is for (its `$id`, if any,
    moves the base URI)."""
    return scope.in_subresource(specification.create_resource(schema))


def follow(schema: dict[str, Any], scope: Resolver[Any]) -> tuple[dict[str, Any] | bool, Resolver[Any]]:
    """Where a chain of `$ref`s from `schema` (in the scope of `scope`) ends: the schema and
    the resolver inside it."""
    visited: set[int] = set()
    target: object = schema
    while isinstance(target, dict) and isinstance(target.get("$ref"), str):
        if id(target) in visited:
            raise InvalidSchema(f"$ref '{schema['$ref']}' refers only to itself")
        visited.add(id(target))
        try:
            resolved = scope.lookup(target["$ref"])
        except Unresolvable as exc:
            raise InvalidSchema(f"$ref '{target['$ref']}' cannot be resolved: {exc}") from None
        target, scope = resolved.contents, resolved.resolver
    if not isinstance(target, dict | bool):
        raise InvalidSchema(f"$ref '{schema['$ref']}' does not lead to a schema")
    return target, scope


def subschemas(schema: dict[str, Any]) -> Iterator[object]:
    """The schemas directly inside `schema`, wherever a keyword holds some."""
    for keyword in SCHEMA_KEYWORDS:
        if isinstance(schema.get(keyword), dict | bool):
            yield schema[keyword]
    for keyword in SCHEMA_LIST_KEYWORDS:
        if isinstance(schema.get(keyword), list):
            yield from schema[keyword]
    for keyword in SCHEMA_MAP_KEYWORDS:
        if isinstance(schema.get(keyword), dict):
            yield from (value for value in schema[keyword].values() if isinstance(value, dict | bool))
