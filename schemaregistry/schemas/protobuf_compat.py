"""Protobuf compatibility: a port of Confluent's protobuf-provider SchemaDiff (as of 8.0),
which lists the differences from an original schema to an update, message by message (by
name) and field by field (by number), and calls the update compatible when every difference
is in COMPATIBLE_CHANGES. isBackwardCompatible diffs the previous schema (original) to the one
being checked (update).

Confluent walks the .proto text; this walks the FileDescriptorProtos protoc made of it, so
type names come fully qualified, a map field is a message with map_entry set and a proto3
`optional` field sits in a synthetic oneof: each is read back as the .proto text says it.
Confluent compares a message type defined in a reference unless both schemas use the same
subject and version of it; here, unless both import the same file with the same content."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from google.protobuf.descriptor_pb2 import (
    DescriptorProto,
    EnumDescriptorProto,
    FieldDescriptorProto,
    FileDescriptorProto,
)

from schemaregistry.schemas.model import MAX_DEPTH, Incompatibility, ParsedSchema, TooComplex
from schemaregistry.schemas.protobuf import ProtobufParsed

COMPATIBLE_CHANGES = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
    }
)

# Scalar types by how they are encoded: a change within a group keeps old data readable
# (https://protobuf.dev/programming-guides/proto3/#updating); an enum is a GENERAL_NUMBER.
SCALAR_KINDS = {
    FieldDescriptorProto.TYPE_INT32: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_INT64: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_UINT32: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_UINT64: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_BOOL: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_SINT32: "SIGNED_NUMBER",
    FieldDescriptorProto.TYPE_SINT64: "SIGNED_NUMBER",
    FieldDescriptorProto.TYPE_STRING: "STRING_OR_BYTES",
    FieldDescriptorProto.TYPE_BYTES: "STRING_OR_BYTES",
    FieldDescriptorProto.TYPE_FIXED32: "FIXED32",
    FieldDescriptorProto.TYPE_SFIXED32: "FIXED32",
    FieldDescriptorProto.TYPE_FIXED64: "FIXED64",
    FieldDescriptorProto.TYPE_SFIXED64: "FIXED64",
    FieldDescriptorProto.TYPE_FLOAT: "FLOAT",
    FieldDescriptorProto.TYPE_DOUBLE: "DOUBLE",
    FieldDescriptorProto.TYPE_ENUM: "GENERAL_NUMBER",
}
NUMERIC_KINDS = {"GENERAL_NUMBER", "SIGNED_NUMBER", "FIXED32", "FIXED64", "FLOAT", "DOUBLE"}


@dataclass(frozen=True)
class _Type:
    """A message or enum of one of the files, by its full name."""

    package: str
    file: FileDescriptorProto
    syntax: str
    message: DescriptorProto | None
    enum: EnumDescriptorProto | None

    @property
    def map_entry(self) -> DescriptorProto | None:
        return self.message if self.message is not None and self.message.options.map_entry else None


@dataclass
class _Side:
    """One of the two schemas: its types, its own file, the syntax of the file being walked."""

    types: dict[str, _Type]
    main: FileDescriptorProto
    syntax: str


@dataclass
class _Shared:
    """Imported message types compared so far, with what was found: reported under the type's
    own name, their differences are the same wherever the type is used. `comparing` holds the
    pairs under way, so that a recursive type ends."""

    memo: dict[tuple[str, str], tuple[list[tuple[str, str, str]], bool]] = field(default_factory=dict)
    comparing: set[tuple[str, str]] = field(default_factory=set)


class _Context:
    """Where the comparison is (message names, oneof names, field numbers), the original
    messages being compared and the differences found."""

    def __init__(self, original: _Side, update: _Side, shared: _Shared, path: Sequence[str] = ()) -> None:
        self.original, self.update, self.shared = original, update, shared
        self.path = list(path)
        self.inside: set[int] = set()
        self.diffs: list[tuple[str, str, str]] = []

    def sub(self, original: _Side, update: _Side, path: Sequence[str]) -> _Context:
        sub = _Context(original, update, self.shared, path)
        sub.inside = set(self.inside)
        return sub

    def add(self, kind: str, field_name: str = "") -> None:
        self.diffs.append((kind, "#/" + "/".join(self.path), field_name))

    def compatible(self) -> bool:
        return all(kind in COMPATIBLE_CHANGES for kind, _, _ in self.diffs)

    @contextmanager
    def at(self, segment: str) -> Iterator[None]:
        self.path.append(segment)
        try:
            yield
        finally:
            self.path.pop()


def is_backward_compatible(this: ParsedSchema, previous: ParsedSchema) -> list[Incompatibility]:
    return [
        _describe(kind, path, name)
        for kind, path, name in differences(previous, this)
        if kind not in COMPATIBLE_CHANGES
    ]


def differences(original: ParsedSchema, update: ParsedSchema) -> list[tuple[str, str, str]]:
    """Every difference from `original` to `update`: (Confluent's type, its path of message
    names and field numbers, the name of the field it is about or "")."""
    before, after = _side(original), _side(update)
    ctx = _Context(before, after, _Shared())
    if before.main.package != after.main.package:
        ctx.add("PACKAGE_CHANGED")
    _compare_types(
        ctx, before.main.message_type, before.main.enum_type, after.main.message_type, after.main.enum_type
    )
    return ctx.diffs


def _side(parsed: ParsedSchema) -> _Side:
    detail = parsed.parsed
    assert isinstance(detail, ProtobufParsed)
    types: dict[str, _Type] = {}
    for file in detail.files.file:
        prefix = f"{file.package}." if file.package else ""
        syntax = file.syntax or "proto2"
        pending: list[tuple[str, DescriptorProto]] = [(prefix + m.name, m) for m in file.message_type]
        for enum in file.enum_type:
            types[prefix + enum.name] = _Type(file.package, file, syntax, None, enum)
        while pending:
            name, message = pending.pop()
            types[name] = _Type(file.package, file, syntax, message, None)
            pending.extend((f"{name}.{nested.name}", nested) for nested in message.nested_type)
            for enum in message.enum_type:
                types[f"{name}.{enum.name}"] = _Type(file.package, file, syntax, None, enum)
    main = detail.file
    return _Side(types, main, main.syntax or "proto2")


def _compare_types(
    ctx: _Context,
    original_messages: Sequence[DescriptorProto],
    original_enums: Sequence[EnumDescriptorProto],
    update_messages: Sequence[DescriptorProto],
    update_enums: Sequence[EnumDescriptorProto],
) -> None:
    """SchemaDiff.compareTypeElements: messages and enums of one scope, by name. A message's
    index matters to no reader (serialized indexes refer to the writer's schema)."""
    before = {m.name: (i, m) for i, m in enumerate(m for m in original_messages if not m.options.map_entry)}
    after = {m.name: (i, m) for i, m in enumerate(m for m in update_messages if not m.options.map_entry)}
    for name in _union(before, after):
        with ctx.at(name):
            if name not in after:
                ctx.add("MESSAGE_REMOVED")
            elif name not in before:
                ctx.add("MESSAGE_ADDED")
            else:
                _compare_messages(ctx, before[name][1], after[name][1])
                if before[name][0] != after[name][0]:
                    ctx.add("MESSAGE_MOVED")
    enums_before, enums_after = {e.name: e for e in original_enums}, {e.name: e for e in update_enums}
    for name in _union(enums_before, enums_after):
        with ctx.at(name):
            if name not in enums_after:
                ctx.add("ENUM_REMOVED")
            elif name not in enums_before:
                ctx.add("ENUM_ADDED")
            else:
                values_before = {v.number: v.name for v in enums_before[name].value}
                values_after = {v.number: v.name for v in enums_after[name].value}
                for number in sorted(values_before.keys() | values_after.keys()):
                    with ctx.at(str(number)):
                        if number not in values_after:
                            ctx.add("ENUM_CONST_REMOVED")
                        elif number not in values_before:
                            ctx.add("ENUM_CONST_ADDED")
                        elif values_before[number] != values_after[number]:
                            ctx.add("ENUM_CONST_CHANGED")


def _union(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    return [*before, *(name for name in after if name not in before)]


def _compare_messages(ctx: _Context, original: DescriptorProto, update: DescriptorProto) -> None:
    """MessageSchemaDiff: oneofs, then fields by number, then nested types. A message met
    again inside its own comparison (a recursive type) is not compared twice."""
    if id(original) not in ctx.inside:
        ctx.inside.add(id(original))
        try:
            _compare_fields(ctx, original, update)
        finally:
            ctx.inside.discard(id(original))
    _compare_types(ctx, original.nested_type, original.enum_type, update.nested_type, update.enum_type)


def _compare_fields(ctx: _Context, original: DescriptorProto, update: DescriptorProto) -> None:
    before, after = _plain_fields(original), _plain_fields(update)
    oneofs_before, oneofs_after = _oneofs(original), _oneofs(update)
    in_oneofs_before = {f.number for fields in oneofs_before.values() for f in fields}
    for name, fields in oneofs_after.items():
        with ctx.at(name):
            moved = existing = 0
            for member in fields:
                if before.pop(member.number, None) is not None:  # moved in: not a FIELD_REMOVED
                    moved += 1
                elif member.number in in_oneofs_before:
                    existing += 1
            if moved > 1:
                ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
            elif moved == 1 and existing > 0:
                ctx.add("FIELD_MOVED_TO_EXISTING_ONEOF")
    for name in _union(oneofs_before, oneofs_after):
        with ctx.at(name):
            if name not in oneofs_after:
                ctx.add("ONEOF_REMOVED")
            elif name not in oneofs_before:
                ctx.add("ONEOF_ADDED")
            else:
                members_before = {f.number: f for f in oneofs_before[name]}
                members_after = {f.number: f for f in oneofs_after[name]}
                for number in sorted(members_before.keys() | members_after.keys()):
                    with ctx.at(str(number)):
                        if number not in members_after:
                            ctx.add("ONEOF_FIELD_REMOVED", members_before[number].name)
                        elif number not in members_before:
                            ctx.add("ONEOF_FIELD_ADDED", members_after[number].name)
                        else:
                            _compare_field(ctx, members_before[number], members_after[number], in_oneof=True)
    for number in sorted(before.keys() | after.keys()):
        with ctx.at(str(number)):
            if number not in after:
                required = before[number].label == FieldDescriptorProto.LABEL_REQUIRED
                ctx.add("REQUIRED_FIELD_REMOVED" if required else "FIELD_REMOVED", before[number].name)
            elif number not in before:
                required = after[number].label == FieldDescriptorProto.LABEL_REQUIRED
                ctx.add("REQUIRED_FIELD_ADDED" if required else "FIELD_ADDED", after[number].name)
            else:
                _compare_field(ctx, before[number], after[number], in_oneof=False)


def _plain_fields(message: DescriptorProto) -> dict[int, FieldDescriptorProto]:
    """The fields outside a oneof (a proto3 `optional` field's oneof is synthetic)."""
    return {f.number: f for f in message.field if not f.HasField("oneof_index") or f.proto3_optional}


def _oneofs(message: DescriptorProto) -> dict[str, list[FieldDescriptorProto]]:
    members: dict[str, list[FieldDescriptorProto]] = {}
    for f in message.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            members.setdefault(message.oneof_decl[f.oneof_index].name, []).append(f)
    return members


def _compare_field(
    ctx: _Context, original: FieldDescriptorProto, update: FieldDescriptorProto, in_oneof: bool
) -> None:
    """FieldSchemaDiff: a rename is compatible (only numbers are on the wire); the kind of the
    type, and for scalars how they are encoded and repeated, must stay."""
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED", update.name)
    labels = (None, None) if in_oneof else (_label(ctx.original, original), _label(ctx.update, update))
    _compare_types_of(ctx, labels, original, update, update.name)


def _label(side: _Side, field: FieldDescriptorProto) -> str | None:
    """The label the .proto text wrote: none for a plain proto3 field."""
    if field.label == FieldDescriptorProto.LABEL_REPEATED:
        return "REPEATED"
    if field.label == FieldDescriptorProto.LABEL_REQUIRED:
        return "REQUIRED"
    return None if side.syntax == "proto3" and not field.proto3_optional else "OPTIONAL"


def _compare_types_of(
    ctx: _Context,
    labels: tuple[str | None, str | None],
    original: FieldDescriptorProto,
    update: FieldDescriptorProto,
    name: str,
) -> None:
    kind_before, kind_after = _kind(ctx.original, original), _kind(ctx.update, update)
    if kind_before != kind_after:
        ctx.add("FIELD_KIND_CHANGED", name)
    elif kind_before == "SCALAR":
        scalar_before, scalar_after = SCALAR_KINDS[original.type], SCALAR_KINDS[update.type]
        if scalar_before != scalar_after:
            ctx.add("FIELD_SCALAR_KIND_CHANGED", name)
        elif None not in labels and labels[0] != labels[1]:
            if scalar_before in NUMERIC_KINDS:
                ctx.add("FIELD_NUMERIC_LABEL_CHANGED", name)
            elif scalar_before == "STRING_OR_BYTES":
                ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED", name)
    elif kind_before == "MAP":
        entry_before = ctx.original.types[original.type_name.lstrip(".")].map_entry
        entry_after = ctx.update.types[update.type_name.lstrip(".")].map_entry
        assert entry_before is not None and entry_after is not None
        for key_before, key_after in zip(entry_before.field, entry_after.field):  # key, then value
            _compare_types_of(ctx, (None, None), key_before, key_after, name)
    else:
        _compare_message_types(ctx, original.type_name.lstrip("."), update.type_name.lstrip("."), name)


def _kind(side: _Side, field: FieldDescriptorProto) -> str:
    if field.type not in (FieldDescriptorProto.TYPE_MESSAGE, FieldDescriptorProto.TYPE_GROUP):
        return "SCALAR"
    return "MAP" if side.types[field.type_name.lstrip(".")].map_entry is not None else "MESSAGE"


def _compare_message_types(ctx: _Context, original: str, update: str, name: str) -> None:
    """The same message (its name without the package) must stay; when it comes from an
    import that changed, it is compared too, its differences reported under its own name."""
    type_before, type_after = ctx.original.types[original], ctx.update.types[update]
    local_before = original.removeprefix(f"{type_before.package}.") if type_before.package else original
    local_after = update.removeprefix(f"{type_after.package}.") if type_after.package else update
    if local_before != local_after:
        ctx.add("FIELD_NAMED_TYPE_CHANGED", name)
        return
    if _same_definition(ctx, type_before, type_after):
        return
    key = (original, update)
    if key not in ctx.shared.memo:
        if key in ctx.shared.comparing:  # a recursive type: compatible unless shown otherwise
            return
        if len(ctx.shared.comparing) >= MAX_DEPTH:
            raise TooComplex(
                f"the Protobuf schemas' message types refer to each other deeper than {MAX_DEPTH} levels"
            )
        assert type_before.message is not None and type_after.message is not None
        sub = ctx.sub(
            _Side(ctx.original.types, ctx.original.main, type_before.syntax),
            _Side(ctx.update.types, ctx.update.main, type_after.syntax),
            local_before.split("."),
        )
        ctx.shared.comparing.add(key)
        try:
            _compare_messages(sub, type_before.message, type_after.message)
        finally:
            ctx.shared.comparing.discard(key)
        ctx.shared.memo[key] = (sub.diffs, sub.compatible())
    found, compatible = ctx.shared.memo[key]
    ctx.diffs += found
    if not compatible:
        ctx.add("FIELD_NAMED_TYPE_CHANGED", name)


def _same_definition(ctx: _Context, before: _Type, after: _Type) -> bool:
    """Both types in the schemas' own files (compared as top-level types already), or both
    in the same imported file, unchanged."""
    if before.file is ctx.original.main and after.file is ctx.update.main:
        return True
    return before.file.name == after.file.name and before.file.SerializeToString(
        deterministic=True
    ) == after.file.SerializeToString(deterministic=True)


_TEMPLATES = {
    "PACKAGE_CHANGED": "The package at '{path}' in the {reader} schema does not match the package "
    "in the {writer} schema",
    "MESSAGE_REMOVED": "The {reader} schema is missing a MESSAGE type at path '{path}' "
    "in the {writer} schema",
    "FIELD_KIND_CHANGED": "The type of a field at path '{path}'{at} in the {reader} schema does not match "
    "the {writer} schema",
    "FIELD_SCALAR_KIND_CHANGED": "The kind of a SCALAR field at path '{path}'{at} in the {reader} schema "
    "does not match its kind in the {writer} schema",
    "FIELD_NAMED_TYPE_CHANGED": "The type of a MESSAGE field at path '{path}'{at} in the {reader} schema "
    "does not match its type in the {writer} schema",
    "FIELD_NUMERIC_LABEL_CHANGED": "The label for a NUMERIC field at path '{path}'{at} "
    "in the {reader} schema does not match its label in the {writer} schema",
    "REQUIRED_FIELD_ADDED": "A required field at path '{path}'{at} in the {reader} schema is missing "
    "in the {writer} schema",
    "REQUIRED_FIELD_REMOVED": "The {reader} schema is missing a required field at path: '{path}'{at} "
    "in the {writer} schema",
    "ONEOF_FIELD_REMOVED": "The {reader} schema is missing a oneof field at path '{path}'{at} "
    "in the {writer} schema",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Multiple fields in the oneof at path '{path}' in the {reader} schema "
    "are outside a oneof in the {writer} schema",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "A field in the oneof at path '{path}' in the {reader} schema "
    "is outside an existing oneof in the {writer} schema",
}


def _describe(kind: str, path: str, field_name: str) -> Incompatibility:
    """Confluent's protobuf.diff.Difference wording, naming the field its path gives the number of."""
    at = f" (field '{field_name}')" if field_name else ""
    return Incompatibility(kind, _TEMPLATES[kind], {"path": path, "at": at})
