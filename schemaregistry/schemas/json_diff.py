"""Confluent's json-schema-provider SchemaDiff (as of 8.0), ported: the differences from an
original JSON Schema to an update, each a (type, JSON path) pair, and the types that keep the
update compatible (COMPATIBLE_CHANGES).

In an open content model (additionalProperties absent or true) a new property is incompatible,
as it may clash with what an open model let through; a removed one is not. In a closed model
it is the other way round, and a new property must not be required. A constraint relaxed is
compatible, tightened is not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import re2

from schemaregistry.schemas.json_model import (
    MISSING,
    ArrayNode,
    CombinedNode,
    ConstNode,
    EmptyNode,
    EnumNode,
    FalseNode,
    Loader,
    Node,
    NotNode,
    NumberNode,
    ObjectNode,
    RefNode,
    StringNode,
)
from schemaregistry.schemas.json_schema import JsonParsed
from schemaregistry.schemas.model import MAX_COMPARISONS, MAX_DEPTH, ParsedSchema, TooComplex

COMPATIBLE_CHANGES = frozenset(
    {
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "PATTERN_REMOVED",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)

RE2_OPTIONS = re2.Options()
RE2_OPTIONS.log_errors = False  # a pattern RE2 cannot run is expected, not worth a line on stderr


def differences(original: ParsedSchema, update: ParsedSchema) -> list[tuple[str, str]]:
    """Every difference from `original` to `update`: (Confluent's type, JSON path)."""
    ctx = _Context([0])
    _compare(ctx, _root(original), _root(update))
    return ctx.diffs


def _root(parsed: ParsedSchema) -> Node:
    detail = parsed.parsed
    assert isinstance(detail, JsonParsed)
    return Loader(detail.specification).load(detail.schema, detail.resolver, scoped=True)


class _Context:
    """The path being compared, the differences found, the original schemas being compared
    (met again, a recursive schema, they are not compared twice) and the shared count of
    comparisons."""

    def __init__(
        self, spent: list[int], path: tuple[str, ...] = (), inside: frozenset[int] = frozenset()
    ) -> None:
        self.spent = spent
        self.path = list(path)
        self.inside = set(inside)
        self.diffs: list[tuple[str, str]] = []

    def sub(self) -> _Context:
        return _Context(self.spent, tuple(self.path), frozenset(self.inside))

    def add(self, kind: str, *attribute: str) -> None:
        self.diffs.append((kind, "#/" + "/".join([*self.path, *attribute])))

    def compatible(self) -> bool:
        return all(kind in COMPATIBLE_CHANGES for kind, _ in self.diffs)

    @contextmanager
    def at(self, segment: str) -> Iterator[None]:
        self.path.append(segment)
        try:
            yield
        finally:
            self.path.pop()


def _compare(ctx: _Context, original: Node | None, update: Node | None) -> None:
    """SchemaDiff.compare."""
    if original is None or update is None:
        if original is not update:
            ctx.add("SCHEMA_ADDED" if original is None else "SCHEMA_REMOVED")
        return
    ctx.spent[0] += 1
    if ctx.spent[0] > MAX_COMPARISONS:
        raise TooComplex(f"comparing the JSON schemas takes more than {MAX_COMPARISONS} steps")
    if len(ctx.path) > 2 * MAX_DEPTH:  # a nested object adds two steps: properties/<name>
        raise TooComplex(f"the JSON schemas nest deeper than {MAX_DEPTH} levels")
    original, update = _referred(original), _referred(update)
    if _union_special_case(ctx, original, update):
        return
    if type(original) is not type(update):
        if not isinstance(original, FalseNode) and not isinstance(update, EmptyNode):
            ctx.add("TYPE_CHANGED")
        return
    if id(original) in ctx.inside:
        return
    ctx.inside.add(id(original))
    try:
        for kind, before, after in (
            ("ID_CHANGED", original.schema_id, update.schema_id),
            ("TITLE_CHANGED", original.title, update.title),
            ("DESCRIPTION_CHANGED", original.description, update.description),
            ("DEFAULT_CHANGED", original.default, update.default),
        ):
            if before != after:
                ctx.add(kind)
        _compare_same_class(ctx, original, update)
    finally:
        ctx.inside.discard(id(original))


def _referred(node: Node) -> Node:
    return node.target() if isinstance(node, RefNode) else node


def _union_special_case(ctx: _Context, original: Node, update: Node) -> bool:
    """A schema that became one of the branches of an anyOf/oneOf (or stopped being one of
    an allOf's) is compatible as long as it is compatible with that branch."""
    if not isinstance(original, CombinedNode) and isinstance(update, CombinedNode):
        if len(update.subschemas) == 1:
            return _try(ctx, original, update.subschemas[0], None)
        if update.criterion in ("anyOf", "oneOf"):
            return any(_try(ctx, original, sub, "SUM_TYPE_EXTENDED") for sub in update.subschemas)
    elif isinstance(original, CombinedNode) and not isinstance(update, CombinedNode):
        if len(original.subschemas) == 1:
            return _try(ctx, original.subschemas[0], update, None)
        if original.criterion == "allOf":
            return any(_try(ctx, sub, update, "PRODUCT_TYPE_NARROWED") for sub in original.subschemas)
    return False


def _try(ctx: _Context, original: Node, update: Node, then: str | None) -> bool:
    sub = ctx.sub()
    _compare(sub, original, update)
    if not sub.compatible():
        return False
    ctx.diffs += sub.diffs
    if then:
        ctx.add(then)
    return True


def _compare_same_class(ctx: _Context, original: Node, update: Node) -> None:
    if isinstance(original, StringNode) and isinstance(update, StringNode):
        _limits(ctx, "maxLength", "MAX_LENGTH", original.max_length, update.max_length)
        _limits(ctx, "minLength", "MIN_LENGTH", original.min_length, update.min_length)
        if original.pattern is None and update.pattern is not None:
            ctx.add("PATTERN_ADDED", "pattern")
        elif original.pattern is not None and update.pattern is None:
            ctx.add("PATTERN_REMOVED", "pattern")
        elif original.pattern != update.pattern:
            ctx.add("PATTERN_CHANGED", "pattern")
    elif isinstance(original, NumberNode) and isinstance(update, NumberNode):
        _numbers(ctx, original, update)
    elif isinstance(original, ConstNode) and isinstance(update, ConstNode):
        if _json(original.value) != _json(update.value):
            ctx.add("ENUM_ARRAY_CHANGED", "const")
    elif isinstance(original, EnumNode) and isinstance(update, EnumNode):
        before, after = {_json(v) for v in original.values}, {_json(v) for v in update.values}
        if before != after:
            ctx.add(
                "ENUM_ARRAY_EXTENDED"
                if after > before
                else "ENUM_ARRAY_NARROWED"
                if after < before
                else "ENUM_ARRAY_CHANGED",
                "enum",
            )
    elif isinstance(original, CombinedNode) and isinstance(update, CombinedNode):
        _combined(ctx, original, update)
    elif isinstance(original, NotNode) and isinstance(update, NotNode):
        with ctx.at("not"):
            sub = ctx.sub()
            _compare(sub, update.must_not_match, original.must_not_match)  # what is excluded, reversed
            ctx.add("NOT_TYPE_NARROWED" if sub.compatible() else "NOT_TYPE_EXTENDED")
    elif isinstance(original, ObjectNode) and isinstance(update, ObjectNode):
        _objects(ctx, original, update)
    elif isinstance(original, ArrayNode) and isinstance(update, ArrayNode):
        _arrays(ctx, original, update)


def _limits(ctx: _Context, keyword: str, kind: str, before: float | None, after: float | None) -> None:
    """A keyword that bounds a value: ADDED, REMOVED, INCREASED or DECREASED."""
    if before == after:
        return
    if before is None:
        ctx.add(f"{kind}_ADDED", keyword)
    elif after is None:
        ctx.add(f"{kind}_REMOVED", keyword)
    else:
        ctx.add(f"{kind}_INCREASED" if before < after else f"{kind}_DECREASED", keyword)


def _numbers(ctx: _Context, original: NumberNode, update: NumberNode) -> None:
    _limits(ctx, "maximum", "MAXIMUM", original.maximum, update.maximum)
    _limits(ctx, "minimum", "MINIMUM", original.minimum, update.minimum)
    _limits(
        ctx, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM", original.exclusive_maximum, update.exclusive_maximum
    )
    _limits(
        ctx, "exclusiveMinimum", "EXCLUSIVE_MINIMUM", original.exclusive_minimum, update.exclusive_minimum
    )
    before, after = original.multiple_of, update.multiple_of
    if before != after:
        if before is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif after is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif Fraction(str(after)) % Fraction(str(before)) == 0:
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif Fraction(str(before)) % Fraction(str(after)) == 0:
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if original.requires_integer != update.requires_integer:
        ctx.add("TYPE_EXTENDED" if original.requires_integer else "TYPE_NARROWED")


def _combined(ctx: _Context, original: CombinedNode, update: CombinedNode) -> None:
    """CombinedSchemaDiff: the criterion, then a maximum matching of compatible pairs of
    subschemas, which must cover the smaller side."""
    if original.criterion != update.criterion:
        single_original, single_update = len(original.subschemas) == 1, len(update.subschemas) == 1
        if (
            update.criterion == "anyOf"
            or (single_original and single_update)
            or (single_original and update.criterion == "oneOf")
            or (single_update and original.criterion == "allOf")
        ):
            ctx.add("COMBINED_TYPE_EXTENDED")
        else:
            ctx.add("COMBINED_TYPE_CHANGED")
            return
    before, after = _distinct(original.subschemas), _distinct(update.subschemas)
    if len(before) < len(after):
        ctx.add("PRODUCT_TYPE_EXTENDED" if update.criterion == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(before) > len(after):
        ctx.add("PRODUCT_TYPE_NARROWED" if original.criterion == "allOf" else "SUM_TYPE_NARROWED")
    compatible: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for i, old in enumerate(before):
        with ctx.at(f"{original.criterion}/{i}"):
            for j, new in enumerate(after):
                sub = ctx.sub()
                _compare(sub, old, new)
                if sub.compatible():
                    compatible[i, j] = sub.diffs
    matching = _maximum_matching(len(before), compatible)
    for i, j in sorted(matching.items()):
        ctx.diffs += compatible[i, j]
    if len(matching) < min(len(before), len(after)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _distinct(nodes: list[Node]) -> list[Node]:
    """The subschemas without repeats (Confluent collapses equal ones: same keywords)."""
    seen: dict[str, Node] = {}
    for node in nodes:
        common = (node.schema_id, node.title, node.description, node.default)
        present = [value for value in common if value is not MISSING]
        seen.setdefault(_json([type(node).__name__, node.source, present]), node)
    return list(seen.values())


def _maximum_matching(left: int, edges: dict[tuple[int, int], Any]) -> dict[int, int]:
    """Left -> right of a maximum bipartite matching (augmenting paths)."""
    neighbours: dict[int, list[int]] = {}
    for i, j in edges:
        neighbours.setdefault(i, []).append(j)
    matched_right: dict[int, int] = {}

    def augment(i: int, visited: set[int]) -> bool:
        for j in neighbours.get(i, []):
            if j not in visited:
                visited.add(j)
                if j not in matched_right or augment(matched_right[j], visited):
                    matched_right[j] = i
                    return True
        return False

    for i in range(left):
        augment(i, set())
    return {i: j for j, i in matched_right.items()}


def _objects(ctx: _Context, original: ObjectNode, update: ObjectNode) -> None:
    """ObjectSchemaDiff: required, properties, dependencies, additionalProperties, sizes."""
    with ctx.at("required"):
        for key in original.properties:
            if key in update.properties:
                was, now = key in original.required, key in update.required
                if was and not now:
                    ctx.add("REQUIRED_ATTRIBUTE_REMOVED", key)
                elif now and not was:
                    with_default = update.properties[key].default is not MISSING
                    ctx.add(
                        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                        if with_default
                        else "REQUIRED_ATTRIBUTE_ADDED",
                        key,
                    )
    with ctx.at("properties"):
        for key in [*original.properties, *(k for k in update.properties if k not in original.properties)]:
            with ctx.at(key):
                _property(ctx, key, original, update)
    with ctx.at("dependencies"):
        _dependencies(ctx, original, update)
    with ctx.at("additionalProperties"):
        if original.permits_additional != update.permits_additional:
            ctx.add(
                "ADDITIONAL_PROPERTIES_ADDED"
                if update.permits_additional
                else "ADDITIONAL_PROPERTIES_REMOVED"
            )
        elif original.additional_schema is None and update.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_NARROWED")
        elif update.additional_schema is None and original.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_EXTENDED")
        else:
            _compare(ctx, original.additional_schema, update.additional_schema)
    _limits(ctx, "maxProperties", "MAX_PROPERTIES", original.max_properties, update.max_properties)
    _limits(ctx, "minProperties", "MIN_PROPERTIES", original.min_properties, update.min_properties)


def _property(ctx: _Context, key: str, original: ObjectNode, update: ObjectNode) -> None:
    before, after = original.properties.get(key), update.properties.get(key)
    if after is None:
        assert before is not None
        # only the update's content model matters: a removal is safe only where it stays open
        if _open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
        elif (partial := _partial_schema(update, key)) is not None:
            _covered(ctx, before, partial, "PROPERTY_REMOVED")
        else:
            is_false = isinstance(before, FalseNode)
            ctx.add(
                "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                if is_false
                else "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
            )
    elif before is None:
        # only the original's content model matters: an addition is safe only where it was closed
        if _open(original):
            empty = isinstance(after, EmptyNode)
            ctx.add(
                "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                if empty
                else "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
            )
            return
        if (partial := _partial_schema(original, key)) is not None:
            _covered(ctx, partial, after, "PROPERTY_ADDED")
        if key not in update.required:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        elif after.default is not MISSING:
            ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            ctx.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
    else:
        _compare(ctx, before, after)


def _covered(ctx: _Context, original: Node, update: Node, change: str) -> None:
    """A property or item added or removed where a partially open content model (patterns or
    an additionalProperties/Items schema) covers it: compatible if the schemas are."""
    sub = ctx.sub()
    _compare(sub, original, update)
    ctx.diffs += sub.diffs
    ctx.add(
        f"{change}_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
        if sub.compatible()
        else f"{change}_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )


def _open(schema: ObjectNode) -> bool:
    return not schema.pattern_properties and schema.additional_schema is None and schema.permits_additional


def _partial_schema(schema: ObjectNode, key: str) -> Node | None:
    for pattern, node in schema.pattern_properties:
        if _matches(pattern, key):
            return node
    return schema.additional_schema


def _matches(pattern: str, key: str) -> bool:
    """Java's Matcher.find, run by RE2 so that no pattern backtracks for long. A pattern RE2
    cannot run (backreferences, lookaround) is taken to match nothing: the property is then
    judged by the rest of the content model, which may call compatible changes incompatible."""
    try:
        return re2.compile(pattern, RE2_OPTIONS).search(key) is not None
    except re2.error:
        return False


def _dependencies(ctx: _Context, original: ObjectNode, update: ObjectNode) -> None:
    keys = [
        *original.property_dependencies,
        *(k for k in update.property_dependencies if k not in original.property_dependencies),
    ]
    for key in keys:
        before, after = original.property_dependencies.get(key), update.property_dependencies.get(key)
        if after is None:
            ctx.add("DEPENDENCY_ARRAY_REMOVED", key)
        elif before is None:
            ctx.add("DEPENDENCY_ARRAY_ADDED", key)
        elif before != after:
            ctx.add(
                "DEPENDENCY_ARRAY_EXTENDED"
                if after > before
                else "DEPENDENCY_ARRAY_NARROWED"
                if after < before
                else "DEPENDENCY_ARRAY_CHANGED",
                key,
            )
    keys = [
        *original.schema_dependencies,
        *(k for k in update.schema_dependencies if k not in original.schema_dependencies),
    ]
    for key in keys:
        with ctx.at(key):
            if key not in update.schema_dependencies:
                ctx.add("DEPENDENCY_SCHEMA_REMOVED")
            elif key not in original.schema_dependencies:
                ctx.add("DEPENDENCY_SCHEMA_ADDED")
            else:
                _compare(ctx, original.schema_dependencies[key], update.schema_dependencies[key])


def _arrays(ctx: _Context, original: ArrayNode, update: ArrayNode) -> None:
    """ArraySchemaDiff: the items schema, the tuple of item schemas, additionalItems, sizes."""
    with ctx.at("items"):
        _compare(ctx, original.all_items, update.all_items)
    before, after = original.item_schemas or [], update.item_schemas or []
    for index in range(max(len(before), len(after))):
        with ctx.at(f"items/{index}"):
            if index < len(before) and index < len(after):
                _compare(ctx, before[index], after[index])
            elif index < len(before):
                _item_removed(ctx, before[index], update)
            else:
                _item_added(ctx, after[index], original)
    with ctx.at("additionalItems"):
        if original.permits_additional_items != update.permits_additional_items:
            ctx.add(
                "ADDITIONAL_ITEMS_REMOVED" if original.permits_additional_items else "ADDITIONAL_ITEMS_ADDED"
            )
        elif original.additional_items_schema is None and update.additional_items_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_NARROWED")
        elif update.additional_items_schema is None and original.additional_items_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_EXTENDED")
        else:
            _compare(ctx, original.additional_items_schema, update.additional_items_schema)
    _limits(ctx, "maxItems", "MAX_ITEMS", original.max_items, update.max_items)
    _limits(ctx, "minItems", "MIN_ITEMS", original.min_items, update.min_items)
    if original.unique_items != update.unique_items:
        ctx.add("UNIQUE_ITEMS_REMOVED" if original.unique_items else "UNIQUE_ITEMS_ADDED", "uniqueItems")


def _item_removed(ctx: _Context, item: Node, update: ArrayNode) -> None:
    if update.additional_items_schema is None and update.permits_additional_items:
        ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
    elif update.additional_items_schema is not None:
        _covered(ctx, item, update.additional_items_schema, "ITEM_REMOVED")
    else:
        is_false = isinstance(item, FalseNode)
        ctx.add(
            "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
            if is_false
            else "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"
        )


def _item_added(ctx: _Context, item: Node, original: ArrayNode) -> None:
    if original.additional_items_schema is None and original.permits_additional_items:
        empty = isinstance(item, EmptyNode)
        ctx.add(
            "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
            if empty
            else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
        )
    elif original.additional_items_schema is not None:
        _covered(ctx, original.additional_items_schema, item, "ITEM_ADDED")
    else:
        ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
