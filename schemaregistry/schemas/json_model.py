"""A JSON Schema document read into the schema classes of everit-json-schema, the library
Confluent's JSON Schema provider loads documents with and its SchemaDiff compares: which class
a document becomes decides which differences are found ({"type": "string", "enum": [...]} is an
allOf of an enum schema and a string schema, "type": ["string", "null"] an anyOf, keywords of a
type without "type" a schema of that type, ...). `$ref`s are followed when compared, so
recursive documents load."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from referencing import Specification

from schemaregistry.schemas.json_schema import enter, follow

if TYPE_CHECKING:
    from referencing._core import Resolver

MISSING = object()  # a keyword that is absent, unlike one whose value is null

OBJECT_KEYWORDS = (
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
)
ARRAY_KEYWORDS = (
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
)
NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
STRING_KEYWORDS = ("minLength", "maxLength", "pattern", "format")
CONDITIONAL_KEYWORDS = ("if", "then", "else")
COMBINED_KEYWORDS = ("allOf", "anyOf", "oneOf")


@dataclass(eq=False)
class Node:
    """One schema; `source` holds the keywords it was read from (two subschemas of a
    combined schema that have the same source are one, as Confluent collapses them)."""

    source: dict[str, Any]
    schema_id: Any = MISSING
    title: Any = MISSING
    description: Any = MISSING
    default: Any = MISSING


class EmptyNode(Node):
    """{} or true: anything is valid."""


class FalseNode(Node):
    """false: nothing is valid."""


@dataclass(eq=False)
class RefNode(Node):
    loader: Loader | None = None
    scope: Resolver[Any] | None = None

    def target(self) -> Node:
        assert self.loader is not None and self.scope is not None
        target, scope = follow(self.source, self.scope)
        return self.loader.load(target, scope, scoped=True)


@dataclass(eq=False)
class CombinedNode(Node):
    criterion: str = "allOf"
    subschemas: list[Node] = field(default_factory=list)


@dataclass(eq=False)
class EnumNode(Node):
    values: list[Any] = field(default_factory=list)


@dataclass(eq=False)
class ConstNode(Node):
    value: Any = None


@dataclass(eq=False)
class NotNode(Node):
    must_not_match: Node | None = None


@dataclass(eq=False)
class StringNode(Node):
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None


@dataclass(eq=False)
class NumberNode(Node):
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    multiple_of: float | None = None
    requires_integer: bool = False


class BooleanNode(Node):
    pass


class NullNode(Node):
    pass


class ConditionalNode(Node):
    """if/then/else: SchemaDiff compares nothing inside one."""


@dataclass(eq=False)
class ObjectNode(Node):
    properties: dict[str, Node] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    permits_additional: bool = True
    additional_schema: Node | None = None
    pattern_properties: list[tuple[str, Node]] = field(default_factory=list)
    property_dependencies: dict[str, set[str]] = field(default_factory=dict)
    schema_dependencies: dict[str, Node] = field(default_factory=dict)
    min_properties: int | None = None
    max_properties: int | None = None


@dataclass(eq=False)
class ArrayNode(Node):
    all_items: Node | None = None
    item_schemas: list[Node] | None = None
    permits_additional_items: bool = True
    additional_items_schema: Node | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False


class Loader:
    """Reads the schemas of one document; each JSON object becomes one Node (the same one
    however it is reached), so a comparison can tell a schema it is already inside."""

    def __init__(self, specification: Specification[Any]) -> None:
        self._specification = specification
        self._nodes: dict[int, Node] = {}
        self._draft4 = specification.name == "draft-04"

    def load(self, raw: object, scope: Resolver[Any], scoped: bool = False) -> Node:
        """The schema `raw`; `scope` is the resolver of the schema it is in, or its own if `scoped`."""
        if raw is True:
            return EmptyNode({})
        if raw is False:
            return FalseNode({})
        assert isinstance(raw, dict)
        node = self._nodes.get(id(raw))
        if node is None:
            node = self._read(raw, scope if scoped else enter(raw, scope, self._specification))
            self._nodes[id(raw)] = node
        return node

    def _read(self, raw: dict[str, Any], scope: Resolver[Any]) -> Node:
        """everit's SchemaLoader: a `$ref` alone; otherwise the schemas each group of keywords
        makes, in its order, all of them together (a synthetic allOf) when more than one."""
        if isinstance(raw.get("$ref"), str):
            return RefNode(raw, loader=self, scope=scope)
        consumed: set[str] = set()
        found: list[Node] = []
        if "enum" in raw:
            consumed.add("enum")
            found.append(EnumNode({"enum": raw["enum"]}, values=list(raw["enum"])))
        for keyword in COMBINED_KEYWORDS:
            if keyword in raw:
                consumed.add(keyword)
                subschemas = [self.load(sub, scope) for sub in raw[keyword]]
                found.append(CombinedNode({keyword: raw[keyword]}, criterion=keyword, subschemas=subschemas))
        if "not" in raw:
            consumed.add("not")
            found.append(NotNode({"not": raw["not"]}, must_not_match=self.load(raw["not"], scope)))
        if "const" in raw and not self._draft4:
            consumed.add("const")
            found.append(ConstNode({"const": raw["const"]}, value=raw["const"]))
        if isinstance(raw.get("type"), str):
            found.append(self._typed(raw["type"], raw, scope, consumed))
        elif isinstance(raw.get("type"), list):
            typed = [self._typed(name, raw, scope, consumed) for name in raw["type"]]
            found.append(CombinedNode({"type": raw["type"]}, criterion="anyOf", subschemas=typed))
        found.extend(self._sniffed({k: v for k, v in raw.items() if k not in consumed}, scope))
        if not found:
            node: Node = EmptyNode(raw)
        elif len(found) == 1:
            node = found[0]
        else:
            node = CombinedNode(raw, criterion="allOf", subschemas=found)
        node.schema_id = raw.get("id" if self._draft4 else "$id", MISSING)
        node.title = raw.get("title", MISSING)
        node.description = raw.get("description", MISSING)
        node.default = raw.get("default", MISSING)
        return node

    def _typed(self, name: str, raw: dict[str, Any], scope: Resolver[Any], consumed: set[str]) -> Node:
        """The schema an explicit "type" makes, reading that type's keywords."""
        if name == "boolean":
            return BooleanNode({"type": name})
        if name == "null":
            return NullNode({"type": name})
        keywords = {
            "string": STRING_KEYWORDS,
            "integer": NUMBER_KEYWORDS,
            "number": NUMBER_KEYWORDS,
            "object": OBJECT_KEYWORDS,
            "array": ARRAY_KEYWORDS,
        }[name]
        consumed.update(keywords)
        own = {key: raw[key] for key in keywords if key in raw}
        node = self._of_type(name, own, scope)
        node.source = {"type": name, **own}
        return node

    def _sniffed(self, rest: dict[str, Any], scope: Resolver[Any]) -> list[Node]:
        """Schemas implied by a type's keywords where no "type" names it (everit's
        PropertySnifferSchemaExtractor)."""
        found: list[Node] = []
        for name, keywords in (
            ("array", ARRAY_KEYWORDS),
            ("object", OBJECT_KEYWORDS),
            ("number", NUMBER_KEYWORDS),
            ("string", STRING_KEYWORDS),
        ):
            own = {key: rest[key] for key in keywords if key in rest}
            if own:
                node = self._of_type(name, own, scope)
                node.source = own
                found.append(node)
        if not self._draft4 and any(key in rest for key in CONDITIONAL_KEYWORDS):
            found.append(ConditionalNode({key: rest[key] for key in CONDITIONAL_KEYWORDS if key in rest}))
        return found

    def _of_type(self, name: str, own: dict[str, Any], scope: Resolver[Any]) -> Node:
        if name == "string":
            return StringNode(
                own,
                min_length=own.get("minLength"),
                max_length=own.get("maxLength"),
                pattern=own.get("pattern"),
            )
        if name in ("integer", "number"):
            return NumberNode(
                own,
                minimum=own.get("minimum"),
                maximum=own.get("maximum"),
                exclusive_minimum=_limit(own.get("exclusiveMinimum")),
                exclusive_maximum=_limit(own.get("exclusiveMaximum")),
                multiple_of=own.get("multipleOf"),
                requires_integer=name == "integer",
            )
        if name == "object":
            return self._object(own, scope)
        return self._array(own, scope)

    def _object(self, own: dict[str, Any], scope: Resolver[Any]) -> ObjectNode:
        additional = own.get("additionalProperties", True)
        node = ObjectNode(
            own,
            properties={key: self.load(value, scope) for key, value in own.get("properties", {}).items()},
            required=list(own.get("required", [])),
            permits_additional=additional is not False,
            additional_schema=self.load(additional, scope) if isinstance(additional, dict) else None,
            pattern_properties=[
                (key, self.load(value, scope)) for key, value in own.get("patternProperties", {}).items()
            ],
            min_properties=own.get("minProperties"),
            max_properties=own.get("maxProperties"),
        )
        dependencies = {**own.get("dependencies", {}), **own.get("dependentRequired", {})}
        dependencies.update(own.get("dependentSchemas", {}))
        for key, value in dependencies.items():
            if isinstance(value, list):
                node.property_dependencies[key] = set(value)
            else:
                node.schema_dependencies[key] = self.load(value, scope)
        return node

    def _array(self, own: dict[str, Any], scope: Resolver[Any]) -> ArrayNode:
        items = own.get("items")
        tuple_items = own.get("prefixItems", items if isinstance(items, list) else None)
        additional = own.get("additionalItems", True)
        if "prefixItems" in own and items is not None:  # 2020-12: "items" is what follows the tuple
            additional = items
        return ArrayNode(
            own,
            all_items=self.load(items, scope)
            if isinstance(items, dict | bool) and "prefixItems" not in own
            else None,
            item_schemas=[self.load(item, scope) for item in tuple_items]
            if tuple_items is not None
            else None,
            permits_additional_items=additional is not False,
            additional_items_schema=self.load(additional, scope) if isinstance(additional, dict) else None,
            min_items=own.get("minItems"),
            max_items=own.get("maxItems"),
            unique_items=own.get("uniqueItems") is True,
        )


def _limit(value: object) -> float | None:
    """An exclusive limit: a number since draft 6; draft 4's boolean modifies minimum/maximum
    and is no limit of its own (everit's getExclusiveMinimumLimit is null then)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
