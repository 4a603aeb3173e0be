"""Records as JSON values on one side, Confluent-framed Avro, Protobuf or JSON Schema payloads on
the other: what kctl's produce and consume need to speak with Confluent's serializers.

Encoding takes one JSON-decoded value (what kctl reads from a line of input) and either
returns the framed payload or raises `RecordDoesNotFit`, naming the field at fault as a JSON
Pointer ("/address/zip", "/items/3"; "/" is the record itself), so kctl can say which line
and which field. Decoding gives back a value `json.dumps` can print.

kctl produces thousands of records a second, so everything derived from a schema (fastavro's
parsed schema and the checks compiled from it, Protobuf message classes, JSON Schema
validators) is built once per schema, and the Avro, Protobuf and JSON Schema libraries are
imported only when a schema of that type is first used: kctl commands that need none of them
do not pay their import time (jsonschema alone takes over 0.1 s).
"""

import functools
import io
import json
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from schemaregistry.wire import BadPayload, frame

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]
    from google.protobuf.descriptor_pb2 import FileDescriptorSet  # type: ignore[import-untyped]
    from google.protobuf.message import Message  # type: ignore[import-untyped]
    from jsonschema.protocols import Validator  # type: ignore[import-untyped]

    from schemaregistry.schemas import ParsedSchema


class RecordDoesNotFit(ValueError):
    """A value the schema cannot hold: `field` is the JSON Pointer of the part at fault and
    `reason` says what is wrong with it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field}: {reason}")
        self.field = field
        self.reason = reason


class NoSuchMessage(ValueError):
    """A Protobuf message asked for by name or by message indexes that the schema's file lacks."""


class _Misfit(Exception):
    """Raised where a value stops fitting and passed up through the containers, each adding
    its key: the path is built only for a record that fails, never on the way down."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []  # innermost first

    def at(self, key: str) -> "_Misfit":
        self.path.append(key)
        return self

    def does_not_fit(self) -> RecordDoesNotFit:
        return RecordDoesNotFit(_pointer(reversed(self.path)), self.reason)


def _pointer(keys: Any) -> str:
    """A JSON Pointer (RFC 6901: '~' and '/' escaped in keys); "/" for the whole value."""
    escaped = [str(key).replace("~", "~0").replace("/", "~1") for key in keys]
    return "/" + "/".join(escaped)


def _describe(value: Any) -> str:
    """A value as the user wrote it, shortened: 'string "abc"', 'number 5', 'an object'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return f"string {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, bytes | bytearray):
        return f"{len(value)} bytes"
    return _CONTAINERS.get(type(value), type(value).__name__)


_CONTAINERS: dict[type, str] = {dict: "an object", list: "an array"}
_TOO_DEEP = "nested too deeply"


# --- Avro -----------------------------------------------------------------------------------------

_Check = Callable[[Any], Any]
_INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_FLOAT32_MAX = 3.4028234663852886e38
# what fastavro raises reading bytes that are not of the schema: cut short, a string or a
# count running past the end, an enum or union index out of range, nesting without end
_AVRO_READ_ERRORS = (EOFError, ValueError, TypeError, IndexError, OverflowError, MemoryError, RecursionError)
_NAMED = ("record", "error", "enum", "fixed")
# the Python types of JSON values each Avro type takes, and among them the ones it takes
# exactly: a union offers a value to the branches that take it exactly first, so that 5 goes
# to "int" before "double" and "abc" to "string" before "bytes", whatever the branch order
_TAKES: dict[str, tuple[set[type], set[type]]] = {
    "null": ({type(None)}, {type(None)}),
    "boolean": ({bool}, {bool}),
    "int": ({int}, {int}),
    "long": ({int}, {int}),
    "float": ({int, float}, {float}),
    "double": ({int, float}, {float}),
    "string": ({str}, {str}),
    "bytes": ({str, bytes}, {bytes}),
    "fixed": ({str, bytes}, {bytes}),
    "enum": ({str}, {str}),
    "array": ({list}, {list}),
    "map": ({dict}, set()),
    "record": ({dict}, {dict}),
    "error": ({dict}, {dict}),
    "decimal": ({int, float, str}, set()),
}


class AvroCodec:
    """Avro bodies for one schema, with fastavro.

    Input is plain JSON, as confluent-kafka's AvroSerializer takes dicts: a union's value is
    given as is (not Avro JSON's {"type": value}) and goes to the first branch that takes it
    exactly, else to the first that takes it at all; bytes and fixed are strings of
    characters U+0000-U+00FF, one per byte (Avro's JSON convention), or bytes; decimals are
    numbers or numeric strings; other logical types are given as their underlying type
    (timestamp-millis as a long, uuid as a string). Fields not in the schema are refused
    rather than dropped, so a misspelt field is not silently replaced by its default.

    Output keeps the schema's field order; bytes and fixed come back as latin-1 strings (the
    same convention, so a decoded record encodes again unchanged), decimals as strings of
    the number ("12.30", exact, unlike a float), other logical types as their underlying
    value, which is how Avro's JSON encoding shows them.
    """

    def __init__(self, schema: Any, named_schemas: Mapping[str, Any]) -> None:
        """`schema` is fastavro's parsed schema and `named_schemas` every named type it may
        use, the referenced schemas' included (what schemas.avro.AvroParsed holds)."""
        import fastavro

        self._write = fastavro.schemaless_writer
        self._read = fastavro.schemaless_reader
        self._writer = schema
        # logical types change nothing on the wire: reading without them (but decimal) gives
        # JSON-able values instead of datetimes and UUIDs, and a malformed uuid string
        # written by someone else still reads
        self._reader = _without_logical_types(schema)
        checks = _AvroChecks(named_schemas)
        self._check = checks.compile(schema)
        self._has_bytes = checks.has_bytes

    def encode(self, value: Any) -> bytes:
        """The Avro binary encoding of `value`; RecordDoesNotFit when the schema cannot hold it."""
        try:
            prepared = self._check(value)
        except _Misfit as misfit:
            raise misfit.does_not_fit() from None
        except RecursionError:
            raise RecordDoesNotFit("/", _TOO_DEEP) from None
        out = io.BytesIO()
        try:
            self._write(out, self._writer, prepared)
        except (ValueError, TypeError, OverflowError, RecursionError) as error:  # unforeseen by the checks
            raise RecordDoesNotFit("/", str(error)) from None
        return out.getvalue()

    def decode(self, body: bytes) -> Any:
        try:
            value = self._read(io.BytesIO(body), self._reader, None)
            return _avro_jsonable(value) if self._has_bytes else value
        except _AVRO_READ_ERRORS as error:
            raise BadPayload(f"not Avro of this schema: {error or type(error).__name__}") from None


def _without_logical_types(schema: Any) -> Any:
    """A copy of a parsed schema (its named types included) without logicalType attributes,
    but decimal's."""
    if isinstance(schema, list):
        return [_without_logical_types(item) for item in schema]
    if isinstance(schema, dict):
        return {
            key: _without_logical_types(value)
            for key, value in schema.items()
            if not (key == "logicalType" and value != "decimal")
        }
    return schema


def _avro_jsonable(value: Any) -> Any:
    """fastavro's bytes and Decimals made JSON-able; only for schemas that have any."""
    if type(value) is dict:
        return {key: _avro_jsonable(item) for key, item in value.items()}
    if type(value) is list:
        return [_avro_jsonable(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, Decimal):
        return format(value, "f")  # str() would give 0E-8 for 0.00000000
    return value


class _AvroField:
    """A record's field as its check needs it; a default is prepared once, when first needed."""

    __slots__ = ("name", "check", "has_default", "_default", "_default_check", "_prepared")

    def __init__(self, name: str, check: _Check, default_check: _Check, field: Mapping[str, Any]) -> None:
        self.name = name
        self.check = check
        self.has_default = "default" in field
        self._default = field.get("default")
        self._default_check = default_check
        self._prepared: Any = None

    def absent(self) -> Any:
        """The value written for a field the record lacks: its default, else null if the field
        takes null (as fastavro and confluent-kafka do), else the record does not fit."""
        if not self.has_default:
            try:
                return self.check(None)
            except _Misfit:
                raise _Misfit("missing, and the schema gives it no default").at(self.name) from None
        if self._prepared is None:
            # a default is in Avro's JSON encoding (bytes as latin-1 strings), which fastavro
            # would write as is: it goes through the same checks as a value
            self._prepared = (self._default_check(self._default),)
        return self._prepared[0]


class _AvroChecks:
    """Compiles a parsed Avro schema into one function that checks a JSON value against it and
    returns it ready for fastavro's writer: bytes as bytes, decimals as Decimals and each
    union value in fastavro's tuple notation, (branch name, value), so that the branch the
    check chose is the one written."""

    def __init__(self, named: Mapping[str, Any]) -> None:
        self._named = named
        self._compiled: dict[str, _Check] = {}
        self._compiling: set[str] = set()
        self.has_bytes = False

    def compile(self, schema: Any) -> _Check:
        if isinstance(schema, list):
            return self._union(schema)
        if isinstance(schema, str):
            return self._primitive(schema) if schema in _TAKES else self._named_type(schema)
        kind = schema["type"]
        if kind in _NAMED and schema["name"] in self._compiled:  # its definition, met again
            return self._compiled[schema["name"]]
        if schema.get("logicalType") == "decimal" and kind in ("bytes", "fixed"):
            return self._decimal(schema)
        compile_kind = {
            "record": self._record,
            "error": self._record,
            "enum": self._enum,
            "fixed": self._fixed,
            "array": self._array,
            "map": self._map,
        }.get(kind)
        if compile_kind is not None:
            return compile_kind(schema)
        return self.compile(kind)  # a primitive with a logical type or other attributes

    def _named_type(self, name: str) -> _Check:
        if name in self._compiled:
            return self._compiled[name]
        if name in self._compiling:  # a recursive type: its check exists by the time it runs
            return lambda value: self._compiled[name](value)
        return self.compile(self._named[name])  # defined in a referenced schema

    def _kind(self, schema: Any) -> str:
        """The key into _TAKES of a union's branch."""
        if isinstance(schema, dict):
            if schema.get("logicalType") == "decimal" and schema["type"] in ("bytes", "fixed"):
                return "decimal"
            kind = schema["type"]
            return kind if isinstance(kind, str) and kind in _TAKES else self._kind(kind)
        return str(schema) if schema in _TAKES else self._kind(self._named[schema])

    def _union(self, branches: list[Any]) -> _Check:
        compiled = [(_branch_name(branch), self._kind(branch), self.compile(branch)) for branch in branches]
        names = ", ".join(name for name, _, _ in compiled)
        candidates_by_type: dict[type, list[tuple[str, _Check]]] = {}

        def candidates(value_type: type) -> list[tuple[str, _Check]]:
            exact = [(name, check) for name, kind, check in compiled if value_type in _TAKES[kind][1]]
            loose = [(name, check) for name, kind, check in compiled if value_type in _TAKES[kind][0]]
            return exact + [candidate for candidate in loose if candidate not in exact]

        def check(value: Any) -> Any:
            value_type = type(value)
            if value_type not in candidates_by_type:
                candidates_by_type[value_type] = candidates(value_type)
            tried = candidates_by_type[value_type]
            for name, branch_check in tried:
                try:
                    return (name, branch_check(value))
                except _Misfit as misfit:
                    last = misfit
            if len(tried) == 1:  # the one branch it could be for: its own reason says more
                raise last
            raise _Misfit(f"{_describe(value)} fits none of the union's types ({names})")

        return check

    def _record(self, schema: Mapping[str, Any]) -> _Check:
        name = schema["name"]
        self._compiling.add(name)
        fields = []
        for field in schema["fields"]:
            check = self.compile(field["type"])
            # a union field's default is a value of its first branch (Avro specification)
            default_check = (
                _tagged(_branch_name(field["type"][0]), self.compile(field["type"][0]))
                if isinstance(field["type"], list)
                else check
            )
            fields.append(_AvroField(field["name"], check, default_check, field))
        known = frozenset(field.name for field in fields)

        def check_record(value: Any) -> Any:
            if type(value) is not dict:
                raise _Misfit(f"expected an object (record {name}), got {_describe(value)}")
            unknown = value.keys() - known
            if unknown:
                raise _Misfit(f"not a field of record {name}").at(min(unknown))
            prepared = {}
            for field in fields:
                if field.name not in value:
                    prepared[field.name] = field.absent()
                    continue
                try:
                    prepared[field.name] = field.check(value[field.name])
                except _Misfit as misfit:
                    raise misfit.at(field.name) from None
            return prepared

        self._compiled[name] = check_record
        return check_record

    def _enum(self, schema: Mapping[str, Any]) -> _Check:
        name, symbols = schema["name"], frozenset(schema["symbols"])
        listed = ", ".join(schema["symbols"])

        def check(value: Any) -> Any:
            if type(value) is not str or value not in symbols:
                raise _Misfit(f"{_describe(value)} is not a symbol of enum {name} ({listed})")
            return value

        self._compiled[name] = check
        return check

    def _fixed(self, schema: Mapping[str, Any]) -> _Check:
        self.has_bytes = True
        name, size = schema["name"], schema["size"]

        def check(value: Any) -> Any:
            data = _as_bytes(value, f"fixed {name}")
            if len(data) != size:
                raise _Misfit(f"{len(data)} bytes where fixed {name} has {size}")
            return data

        self._compiled[name] = check
        return check

    def _array(self, schema: Mapping[str, Any]) -> _Check:
        check_item = self.compile(schema["items"])

        def check(value: Any) -> Any:
            if type(value) is not list:
                raise _Misfit(f"expected an array, got {_describe(value)}")
            prepared = []
            for index, item in enumerate(value):
                try:
                    prepared.append(check_item(item))
                except _Misfit as misfit:
                    raise misfit.at(str(index)) from None
            return prepared

        return check

    def _map(self, schema: Mapping[str, Any]) -> _Check:
        check_value = self.compile(schema["values"])

        def check(value: Any) -> Any:
            if type(value) is not dict:
                raise _Misfit(f"expected an object (a map), got {_describe(value)}")
            prepared = {}
            for key, item in value.items():
                try:
                    prepared[key] = check_value(item)
                except _Misfit as misfit:
                    raise misfit.at(key) from None
            return prepared

        return check

    def _decimal(self, schema: Mapping[str, Any]) -> _Check:
        self.has_bytes = True
        check = _decimal_check(schema)
        if schema["type"] == "fixed":
            self._compiled[schema["name"]] = check
        return check

    def _primitive(self, kind: str) -> _Check:
        if kind == "bytes":
            self.has_bytes = True
        return _PRIMITIVE_CHECKS[kind]


def _branch_name(branch: Any) -> str:
    """The name fastavro's tuple notation gives a union branch: a named type's full name,
    else its type ("array", "map", "long")."""
    if isinstance(branch, str):
        return branch
    if branch["type"] in _NAMED:
        return str(branch["name"])
    return _branch_name(branch["type"])


def _tagged(name: str, check: _Check) -> _Check:
    return lambda value: (name, check(value))


def _decimal_check(schema: Mapping[str, Any]) -> _Check:
    precision, scale = schema["precision"], schema.get("scale", 0)
    quantum = Decimal(1).scaleb(-scale)
    shape = f"decimal({precision}, {scale})"

    def check(value: Any) -> Any:
        if type(value) not in (int, float, str):
            raise _Misfit(f"expected a number for {shape}, got {_describe(value)}")
        try:
            number = Decimal(str(value))
            exact = number.quantize(quantum)
        except InvalidOperation:
            raise _Misfit(f"{_describe(value)} is not a number that fits {shape}") from None
        if exact != number:
            raise _Misfit(f"{value} has more than {scale} digits after the point ({shape})")
        if len(exact.as_tuple().digits) > precision:
            raise _Misfit(f"{value} has more than {precision} digits ({shape})")
        return exact

    return check


def _as_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if type(value) is not str:
        raise _Misfit(f"expected a string (one character per byte) for {what}, got {_describe(value)}")
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        raise _Misfit(f"{what} is one character per byte: no characters above U+00FF") from None


def _null(value: Any) -> Any:
    if value is not None:
        raise _Misfit(f"expected null, got {_describe(value)}")
    return value


def _boolean(value: Any) -> Any:
    if type(value) is not bool:
        raise _Misfit(f"expected true or false, got {_describe(value)}")
    return value


def _integer(kind: str) -> _Check:
    low, high = _INT_RANGES[kind]

    def check(value: Any) -> Any:
        if type(value) is not int:
            raise _Misfit(f"expected an integer ({kind}), got {_describe(value)}")
        if not low <= value <= high:
            raise _Misfit(f"{value} is out of range for an Avro {kind} ({low} to {high})")
        return value

    return check


def _floating(kind: str) -> _Check:
    largest = _FLOAT32_MAX if kind == "float" else math.inf

    def check(value: Any) -> Any:
        if type(value) not in (int, float):
            raise _Misfit(f"expected a number ({kind}), got {_describe(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise _Misfit(f"{value} is out of range for an Avro {kind}") from None
        if math.isfinite(number) and abs(number) > largest:
            raise _Misfit(f"{value} is out of range for an Avro {kind}")
        return number

    return check


def _string(value: Any) -> Any:
    if type(value) is not str:
        raise _Misfit(f"expected a string, got {_describe(value)}")
    return value


_PRIMITIVE_CHECKS: dict[str, _Check] = {
    "null": _null,
    "boolean": _boolean,
    "int": _integer("int"),
    "long": _integer("long"),
    "float": _floating("float"),
    "double": _floating("double"),
    "string": _string,
    "bytes": lambda value: _as_bytes(value, "bytes"),
}


# --- Protobuf -------------------------------------------------------------------------------------

_PARSE_PREFIX = re.compile(r"^(Failed to parse \S+ field: )+")
_PARSE_WHERE = re.compile(r"\s+at \"?[\w.]+\"?\.*$")


class ProtobufCodec:
    """Protobuf bodies for the messages of one schema file, given as a FileDescriptorSet (the
    file and everything it imports).

    Values are in Protobuf's JSON mapping (json_format): input fields by their .proto or
    JSON (lowerCamel) names, 64-bit integers as numbers or strings, bytes as base64, enums
    by name or number; output uses the .proto names and includes fields at their default
    values (as Confluent's console consumer prints them), 64-bit integers as strings.
    """

    def __init__(self, files: "FileDescriptorSet", file_name: str | None = None) -> None:
        """`file_name` is the schema's own file; by default the last in `files`, where protoc
        puts the file it was asked for, after its imports."""
        from google.protobuf import descriptor_pool, json_format, message_factory  # type: ignore[import-untyped]
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

        self._json = json_format
        self._decode_error = DecodeError
        self._message_class = message_factory.GetMessageClass
        self.pool = descriptor_pool.DescriptorPool()
        for file in _imports_first(files):
            self.pool.Add(file)
        self.file = self.pool.FindFileByName(file_name if file_name is not None else files.file[-1].name)
        # in declaration order (message indexes count in it), as Confluent's serializer reads them
        self._top_level = list(self.file.message_types_by_name.values())
        self._classes: dict[tuple[int, ...], type[Message]] = {}

    def message_indexes(self, full_name: str) -> list[int]:
        """The indexes Confluent's serializers write for a message of this file, given its
        full name ("pkg.Outer.Inner" -> [i, j]: its place among the file's messages, then
        among the nested ones)."""
        try:
            descriptor = self.pool.FindMessageTypeByName(full_name)
        except KeyError:
            raise NoSuchMessage(f"no message {full_name} in {self.file.name}") from None
        if descriptor.file is not self.file:
            raise NoSuchMessage(f"message {full_name} is in {descriptor.file.name}, not in {self.file.name}")
        indexes = []
        while descriptor.containing_type is not None:
            indexes.append(list(descriptor.containing_type.nested_types).index(descriptor))
            descriptor = descriptor.containing_type
        indexes.append(self._top_level.index(descriptor))
        return indexes[::-1]

    def message_type(self, indexes: Sequence[int]) -> "Descriptor":
        """The message the indexes name; [] and [0] are both the file's first message."""
        path = list(indexes) or [0]
        candidates, where = self._top_level, self.file.name
        for index in path:
            if not 0 <= index < len(candidates):
                raise NoSuchMessage(f"message indexes {path}: {where} has {len(candidates)} messages")
            descriptor = candidates[index]
            candidates, where = list(descriptor.nested_types), descriptor.full_name
        return descriptor

    def message_class(self, indexes: Sequence[int]) -> "type[Message]":
        key = tuple(indexes) or (0,)
        if key not in self._classes:
            self._classes[key] = self._message_class(self.message_type(key))
        return self._classes[key]

    def encode(self, value: Any, indexes: Sequence[int]) -> bytes:
        cls = self.message_class(indexes)
        if type(value) is not dict:
            full_name = cls.DESCRIPTOR.full_name
            raise RecordDoesNotFit("/", f"expected an object (message {full_name}), got {_describe(value)}")
        try:
            message = self._json.ParseDict(value, cls(), descriptor_pool=self.pool)
        except self._json.ParseError as error:
            try:
                misfit = self._misfit(cls.DESCRIPTOR, value, error)
            except RecursionError:
                misfit = _Misfit(_TOO_DEEP)
            raise misfit.does_not_fit() from None
        return message.SerializeToString()

    def decode(self, body: bytes, indexes: Sequence[int]) -> Any:
        cls = self.message_class(indexes)
        try:
            return self._json.MessageToDict(
                cls.FromString(body),
                preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
                descriptor_pool=self.pool,
            )
        # past the bytes, JSON may fail too: a Timestamp out of range, an Any of an unknown type
        except (self._decode_error, self._json.SerializeToJsonError, TypeError) as error:
            raise BadPayload(f"not readable as {cls.DESCRIPTOR.full_name}: {error}") from None

    def _misfit(self, descriptor: "Descriptor", value: dict[str, Any], error: Exception) -> _Misfit:
        """Which field made json_format refuse `value` (with `error`): its error names the
        field but not the path to it (nor an array index), so the value is parsed again one
        field, map entry and array element at a time, down to the first one refused. Only for
        values already refused, so its cost is no concern."""
        fields = {field.name: field for field in descriptor.fields}
        fields.update({field.json_name: field for field in descriptor.fields})
        for key, item in value.items():
            field = fields.get(key)
            if field is None:
                return _Misfit(f"not a field of message {descriptor.full_name}").at(key)
            field_error = self._refusal(descriptor, {key: item})
            if field_error is not None:
                return self._field_misfit(descriptor, field, key, item, field_error).at(key)
        return _Misfit(_parse_reason(error))  # each field parses alone: e.g. two of one oneof

    def _field_misfit(
        self, descriptor: "Descriptor", field: "FieldDescriptor", key: str, item: Any, error: Exception
    ) -> _Misfit:
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            for map_key, map_value in item.items() if type(item) is dict else ():
                entry_error = self._refusal(descriptor, {key: {map_key: map_value}})
                if entry_error is not None:
                    value_field = entry.fields_by_name["value"]
                    return self._element_misfit(value_field, map_value, entry_error).at(map_key)
        elif field.is_repeated:
            for index, element in enumerate(item) if type(item) is list else ():
                element_error = self._refusal(descriptor, {key: [element]})
                if element_error is not None:
                    return self._element_misfit(field, element, element_error).at(str(index))
        else:
            return self._element_misfit(field, item, error)
        return _Misfit(_parse_reason(error))

    def _element_misfit(self, field: "FieldDescriptor", item: Any, error: Exception) -> _Misfit:
        """One value of a field: a message's fields are looked into, unless it is one of the
        well-known types (Timestamp, Struct, wrappers...), whose JSON forms are their own."""
        message = field.message_type
        if message is None or type(item) is not dict or message.file.name.startswith("google/protobuf/"):
            return _Misfit(_parse_reason(error))
        return self._misfit(message, item, error)

    def _refusal(self, descriptor: "Descriptor", value: dict[str, Any]) -> Exception | None:
        try:
            self._json.ParseDict(value, self._message_class(descriptor)(), descriptor_pool=self.pool)
        except self._json.ParseError as error:
            return error
        return None


def _parse_reason(error: Exception) -> str:
    """json_format's message without the 'Failed to parse x field: ' chain and ' at X.y'."""
    text = str(error).split("\n")[0]
    return _PARSE_WHERE.sub("", _PARSE_PREFIX.sub("", text)).rstrip(".")


def _imports_first(files: "FileDescriptorSet") -> list[Any]:
    """The set's files, each after the files it imports: a descriptor pool refuses a file
    whose imports it does not have yet."""
    by_name = {file.name: file for file in files.file}
    ordered: list[Any] = []
    placed: set[str] = set()

    def place(name: str) -> None:
        if name in placed or name not in by_name:
            return
        placed.add(name)  # before its imports are: a cycle of imports ends here
        for dependency in by_name[name].dependency:
            place(dependency)
        ordered.append(by_name[name])

    for name in by_name:
        place(name)
    return ordered


# --- JSON Schema ----------------------------------------------------------------------------------


class JsonSchemaCodec:
    """UTF-8 JSON bodies, validated on the way in by the schema's validator (jsonschema's for
    the draft its $schema names, Draft 7 when it names none, its references resolved: what
    schemas.json_schema.JsonParsed holds). Formats are not asserted, as by default in JSON
    Schema. Decoding only parses: a record already in a topic is shown as it is, valid or not."""

    def __init__(self, validator: "Validator") -> None:
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

        self._validator = validator
        self._best_match = best_match

    def encode(self, value: Any) -> bytes:
        try:
            error = self._best_match(self._validator.iter_errors(value))
        except RecursionError:
            raise RecordDoesNotFit("/", _TOO_DEEP) from None
        if error is not None:
            raise RecordDoesNotFit(_pointer(error.absolute_path), error.message)
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except UnicodeEncodeError:
            raise RecordDoesNotFit("/", "a string holds a lone surrogate: not UTF-8") from None
        except ValueError as error:  # NaN or Infinity, which JSON has no way to write
            raise RecordDoesNotFit("/", str(error)) from None

    def decode(self, body: bytes) -> Any:
        try:
            return json.loads(body)
        except (ValueError, RecursionError) as error:
            raise BadPayload(f"not UTF-8 JSON: {error}") from None


# --- registered schemas ---------------------------------------------------------------------------

_Codec = AvroCodec | ProtobufCodec | JsonSchemaCodec
_CODEC_CACHE_SIZE = 256


def codec_for(schema: "ParsedSchema") -> _Codec:
    """The codec of a parsed schema, built once: kctl asks the registry client for schemas by
    id, which hands back the same ParsedSchema object each time."""
    entry = _codecs.get(id(schema))
    if entry is not None and entry[0] is schema:
        _codecs.move_to_end(id(schema))
        return entry[1]
    codec = _build_codec(schema)
    _codecs[id(schema)] = (schema, codec)  # the schema is held, so its id is not reused meanwhile
    if len(_codecs) > _CODEC_CACHE_SIZE:
        _codecs.popitem(last=False)
    return codec


_codecs: "OrderedDict[int, tuple[ParsedSchema, _Codec]]" = OrderedDict()


def _build_codec(schema: "ParsedSchema") -> _Codec:
    if schema.schema_type == "AVRO":
        return AvroCodec(schema.parsed.fastavro, schema.parsed.named_schemas)
    if schema.schema_type == "JSON":
        return JsonSchemaCodec(schema.parsed.validator)
    if schema.schema_type == "PROTOBUF":
        from schemaregistry.schemas import file_descriptor_set

        return ProtobufCodec(file_descriptor_set(schema))
    raise ValueError(f"no encoding for schemas of type {schema.schema_type}")


class Encoder:
    """Encodes records for one registered schema: (its id, the schema parsed).

    For Protobuf, the message is the first of the schema's file unless `message_name` (a
    full name, "pkg.Outer.Inner") says otherwise."""

    def __init__(self, schema_id: int, schema: "ParsedSchema", message_name: str | None = None) -> None:
        self.schema_id = schema_id
        self.schema = schema
        codec = codec_for(schema)
        self.message_indexes: list[int] | None = None
        self._encode_body: Callable[[Any], bytes]
        if isinstance(codec, ProtobufCodec):
            indexes = codec.message_indexes(message_name) if message_name is not None else [0]
            codec.message_class(indexes)  # a schema without messages fails here, not at the first record
            self.message_indexes = indexes
            self._encode_body = functools.partial(codec.encode, indexes=indexes)
        elif message_name is not None:
            raise NoSuchMessage(f"a message name is for Protobuf schemas, not {schema.schema_type}")
        else:
            self._encode_body = codec.encode

    def encode(self, value: Any) -> bytes:
        """The framed payload for one JSON-decoded value; RecordDoesNotFit if the schema cannot hold it."""
        return frame(self.schema_id, self._encode_body(value), self.message_indexes)


def decode(schema: "ParsedSchema", message_indexes: Sequence[int] | None, body: bytes) -> Any:
    """A JSON-able value from a payload's data (its framing already taken off by
    wire.unframe); BadPayload when the data is not a value of the schema."""
    codec = codec_for(schema)
    if isinstance(codec, ProtobufCodec):
        try:
            return codec.decode(body, message_indexes or [0])
        except NoSuchMessage as error:
            raise BadPayload(str(error)) from None
    return codec.decode(body)
