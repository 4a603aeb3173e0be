"""Avro schema resolution as a compatibility check: can a reader schema read what a writer
schema wrote? A port of Java Avro's SchemaCompatibility.ReaderWriterCompatibilityChecker,
which Confluent's AvroSchema.isBackwardCompatible runs (reader = the schema being checked),
worded as Confluent's avro.Difference words it.

Apache Avro's Python port of the checker gives the same verdicts but keeps the messages and
locations of the incompatibilities in two unordered sets, apart from their types, so it cannot
say which field each one is about; this port keeps each as one Incompatibility. Two choices
differ from Java: a union's branches are checked at the union's location rather than from a
fresh root (Java reports a mismatch inside a writer union at path '/'), and every message on a
field names the field, not only its index in the path."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain

from avro.schema import (
    ArraySchema,
    EnumSchema,
    FixedSchema,
    MapSchema,
    NamedSchema,
    RecordSchema,
    Schema,
    UnionSchema,
)

from schemaregistry.schemas.avro import AvroParsed
from schemaregistry.schemas.model import MAX_COMPARISONS, MAX_DEPTH, Incompatibility, ParsedSchema, TooComplex

# Writer types each reader type can read besides its own (the spec's promotions).
PROMOTIONS = {
    "long": {"int"},
    "float": {"int", "long"},
    "double": {"int", "long", "float"},
    "bytes": {"string"},
    "string": {"bytes"},
}


@dataclass(frozen=True)
class _Found:
    kind: str
    location: tuple[str, ...]
    info: str


def is_backward_compatible(this: ParsedSchema, previous: ParsedSchema) -> list[Incompatibility]:
    """What stops `this` (the reader) from reading data written with `previous`."""
    reader = _schema(this)
    checker = _Checker()
    found = checker.check(reader, _schema(previous), ())
    return [_describe(item, reader) for item in found]


def _schema(parsed: ParsedSchema) -> Schema:
    detail = parsed.parsed
    assert isinstance(detail, AvroParsed)
    return detail.schema


def _type(schema: Schema) -> str:
    kind = str(schema.type)
    return "record" if kind == "error" else kind  # an error is a record to Java's Schema.Type


class _Checker:
    """Memoises each (reader, writer) pair, as Java does: a pair met again while it is being
    checked (a recursive type) counts as compatible. The pairs checked are bounded
    (MAX_COMPARISONS), and so is how deep checks nest (MAX_DEPTH)."""

    def __init__(self) -> None:
        self._results: dict[tuple[int, int], list[_Found] | None] = {}
        self._depth = 0
        self._steps = 0
        self._branches: dict[int, dict[tuple[str, str], list[Schema]]] = {}

    def check(self, reader: Schema, writer: Schema, location: tuple[str, ...]) -> list[_Found]:
        self._steps += 1
        if self._steps > MAX_COMPARISONS:
            raise TooComplex(f"comparing the Avro schemas takes more than {MAX_COMPARISONS} steps")
        key = (id(reader), id(writer))
        if key in self._results:
            return self._results[key] or []
        if self._depth >= MAX_DEPTH:
            raise TooComplex(f"the Avro schemas nest types deeper than {MAX_DEPTH} levels")
        self._results[key] = None
        self._depth += 1
        try:
            found = self._calculate(reader, writer, location)
        finally:
            self._depth -= 1
        self._steps += len(found)  # the incompatibilities of nested pairs are copied up
        self._results[key] = found
        return found

    def _calculate(self, reader: Schema, writer: Schema, location: tuple[str, ...]) -> list[_Found]:
        kind, writer_kind = _type(reader), _type(writer)
        if kind == writer_kind:
            return self._same_type(reader, writer, location)
        if isinstance(writer, UnionSchema):  # every branch the writer may have used must be readable
            return [found for branch in writer.schemas for found in self.check(reader, branch, location)]
        if isinstance(reader, UnionSchema):
            # the branch a reader would pick (same type, same name) first: the verdict is the
            # same in any order, but others would be checked for nothing, each pair a cost
            branches = chain(self._by_identity(reader).get(_identity(writer), []), reader.schemas)
            if any(not self.check(branch, writer, location) for branch in branches):
                return []
            return [_Found("MISSING_UNION_BRANCH", location, _lacking(writer))]
        if writer_kind in PROMOTIONS.get(kind, ()):
            return []
        message = f"reader type: {kind.upper()} not compatible with writer type: {writer_kind.upper()}"
        return [_Found("TYPE_MISMATCH", location, message)]

    def _by_identity(self, union: UnionSchema) -> dict[tuple[str, str], list[Schema]]:
        """A union's branches by type and name (built once per union)."""
        if id(union) not in self._branches:
            by_identity: dict[tuple[str, str], list[Schema]] = {}
            for branch in union.schemas:
                by_identity.setdefault(_identity(branch), []).append(branch)
            self._branches[id(union)] = by_identity
        return self._branches[id(union)]

    def _same_type(self, reader: Schema, writer: Schema, location: tuple[str, ...]) -> list[_Found]:
        if isinstance(reader, ArraySchema) and isinstance(writer, ArraySchema):
            return self.check(reader.items, writer.items, (*location, "items"))
        if isinstance(reader, MapSchema) and isinstance(writer, MapSchema):
            return self.check(reader.values, writer.values, (*location, "values"))
        if isinstance(reader, UnionSchema) and isinstance(writer, UnionSchema):
            return [
                _Found("MISSING_UNION_BRANCH", (*location, str(index)), _lacking(branch))
                for index, branch in enumerate(writer.schemas)
                if self.check(reader, branch, location)
            ]
        found: list[_Found] = []
        if (
            isinstance(reader, NamedSchema)
            and isinstance(writer, NamedSchema)
            and not _names_match(reader, writer)
        ):
            found.append(_Found("NAME_MISMATCH", (*location, "name"), f"expected: {writer.fullname}"))
        if isinstance(reader, FixedSchema) and isinstance(writer, FixedSchema) and reader.size != writer.size:
            message = f"expected: {writer.size}, found: {reader.size}"
            found.append(_Found("FIXED_SIZE_MISMATCH", (*location, "size"), message))
        if isinstance(reader, EnumSchema) and isinstance(writer, EnumSchema):
            found.extend(_enum_symbols(reader, writer, location))
        if isinstance(reader, RecordSchema) and isinstance(writer, RecordSchema):
            found.extend(self._fields(reader, writer, location))
        return found

    def _fields(
        self, reader: RecordSchema, writer: RecordSchema, location: tuple[str, ...]
    ) -> Iterator[_Found]:
        writer_fields = {field.name: field for field in writer.fields}
        for index, field in enumerate(reader.fields):
            at = (*location, "fields", str(index))
            names = [field.name, *_aliases(field.props)]
            written = next((writer_fields[name] for name in names if name in writer_fields), None)
            if written is not None:
                yield from self.check(field.type, written.type, (*at, "type"))
            elif field.has_default:
                continue
            elif isinstance(field.type, EnumSchema) and field.type.props.get("default") is not None:
                yield from self.check(field.type, writer, (*at, "type"))  # as Avro 1.11 does
            else:
                yield _Found("READER_FIELD_MISSING_DEFAULT_VALUE", at, field.name)


def _identity(schema: Schema) -> tuple[str, str]:
    return _type(schema), schema.name if isinstance(schema, NamedSchema) else ""


def _lacking(writer: Schema) -> str:
    return f"reader union lacking writer type: {_type(writer).upper()}"


def _names_match(reader: NamedSchema, writer: NamedSchema) -> bool:
    """Java's schemaNameEquals: the same short name, or a reader alias naming the writer."""
    if reader.name == writer.name:
        return True
    namespace = reader.namespace
    aliases = {
        alias if "." in alias or not namespace else f"{namespace}.{alias}" for alias in _aliases(reader.props)
    }
    return writer.fullname in aliases


def _aliases(props: Mapping[str, object]) -> list[str]:
    aliases = props.get("aliases")
    return [alias for alias in aliases if isinstance(alias, str)] if isinstance(aliases, list) else []


def _enum_symbols(reader: EnumSchema, writer: EnumSchema, location: tuple[str, ...]) -> list[_Found]:
    missing = sorted(set(writer.symbols) - set(reader.symbols))
    default = reader.props.get("default")
    if not missing or (default is not None and default in reader.symbols):
        return []
    return [_Found("MISSING_ENUM_SYMBOLS", (*location, "symbols"), f"[{', '.join(missing)}]")]


def _describe(found: _Found, reader: Schema) -> Incompatibility:
    """Confluent's wording (avro.Difference.error), with the field named where the path
    only gives its index."""
    path = "/" + "/".join(token.replace("~", "~0").replace("/", "~1") for token in found.location)
    field = _field_name(reader, found.location)
    at = f" (field '{field}')" if field else ""
    details = {"path": path, "at": at, "field": field, "info": found.info}
    templates = {
        "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{path}'{at} in the {reader} schema "
        "does not match with the {writer} schema",
        "TYPE_MISMATCH": "The type (path '{path}') of "
        + ("field '{field}'" if field else "a field")
        + " in the {reader} schema does not match with the {writer} schema",
        "NAME_MISMATCH": "The name of the schema has changed (path '{path}'){at}",
        "MISSING_ENUM_SYMBOLS": "The {reader} schema is missing enum symbols '{info}' at path '{path}'{at} "
        "in the {writer} schema",
        "MISSING_UNION_BRANCH": "The {reader} schema is missing a type inside a union field "
        "at path '{path}'{at} in the {writer} schema",
        "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{info}' at path '{path}' in the {reader} schema "
        "has no default value and is missing in the {writer} schema",
    }
    return Incompatibility(found.kind, templates[found.kind], details, additional_info=found.info)


def _field_name(reader: Schema, location: tuple[str, ...]) -> str:
    """The dotted names of the fields `location` goes through in the reader schema."""
    names: list[str] = []
    node: Schema | None = reader
    tokens = iter(location)
    for token in tokens:
        if token == "fields" and isinstance(node, RecordSchema):
            index = int(next(tokens, "-1"))
            if not 0 <= index < len(node.fields):
                break
            names.append(node.fields[index].name)
            node = node.fields[index].type if next(tokens, None) == "type" else None
        elif token == "items" and isinstance(node, ArraySchema):
            node = node.items
        elif token == "values" and isinstance(node, MapSchema):
            node = node.values
        else:
            break
    return ".".join(names)
