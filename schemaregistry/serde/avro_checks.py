"""A parsed Avro schema compiled into one function that checks a JSON value against it and
prepares it for fastavro's writer, naming the part at fault when it does not fit: records,
enums, fixed, arrays, maps and unions here, primitive types and decimals in avro_primitives."""

from collections.abc import Mapping
from typing import Any

from schemaregistry.serde.avro_primitives import PRIMITIVE_CHECKS, Check, as_bytes, decimal_check
from schemaregistry.serde.errors import Misfit, describe

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


class _AvroField:
    """A record's field as its check needs it; a default is prepared once, when first needed."""

    __slots__ = ("name", "check", "has_default", "_default", "_default_check", "_prepared")

    def __init__(self, name: str, check: Check, default_check: Check, field: Mapping[str, Any]) -> None:
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
            except Misfit:
                raise Misfit("missing, and the schema gives it no default").at(self.name) from None
        if self._prepared is None:
            # a default is in Avro's JSON encoding (bytes as latin-1 strings), which fastavro
            # would write as is: it goes through the same checks as a value
            self._prepared = (self._default_check(self._default),)
        return self._prepared[0]


class AvroChecks:
    """Compiles a parsed Avro schema into one function that checks a JSON value against it and
    returns it ready for fastavro's writer: bytes as bytes, decimals as Decimals and each
    union value in fastavro's tuple notation, (branch name, value), so that the branch the
    check chose is the one written."""

    def __init__(self, named: Mapping[str, Any]) -> None:
        self._named = named
        self._compiled: dict[str, Check] = {}
        self._compiling: set[str] = set()
        self.has_bytes = False

    def compile(self, schema: Any) -> Check:
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

    def _named_type(self, name: str) -> Check:
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

    def _union(self, branches: list[Any]) -> Check:
        compiled = [(_branch_name(branch), self._kind(branch), self.compile(branch)) for branch in branches]
        names = ", ".join(name for name, _, _ in compiled)
        candidates_by_type: dict[type, list[tuple[str, Check]]] = {}

        def candidates(value_type: type) -> list[tuple[str, Check]]:
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
                except Misfit as misfit:
                    last = misfit
            if len(tried) == 1:  # the one branch it could be for: its own reason says more
                raise last
            raise Misfit(f"{describe(value)} fits none of the union's types ({names})")

        return check

    def _record(self, schema: Mapping[str, Any]) -> Check:
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
                raise Misfit(f"expected an object (record {name}), got {describe(value)}")
            unknown = value.keys() - known
            if unknown:
                raise Misfit(f"not a field of record {name}").at(min(unknown))
            prepared = {}
            for field in fields:
                if field.name not in value:
                    prepared[field.name] = field.absent()
                    continue
                try:
                    prepared[field.name] = field.check(value[field.name])
                except Misfit as misfit:
                    raise misfit.at(field.name) from None
            return prepared

        self._compiled[name] = check_record
        return check_record

    def _enum(self, schema: Mapping[str, Any]) -> Check:
        name, symbols = schema["name"], frozenset(schema["symbols"])
        listed = ", ".join(schema["symbols"])

        def check(value: Any) -> Any:
            if type(value) is not str or value not in symbols:
                raise Misfit(f"{describe(value)} is not a symbol of enum {name} ({listed})")
            return value

        self._compiled[name] = check
        return check

    def _fixed(self, schema: Mapping[str, Any]) -> Check:
        self.has_bytes = True
        name, size = schema["name"], schema["size"]

        def check(value: Any) -> Any:
            data = as_bytes(value, f"fixed {name}")
            if len(data) != size:
                raise Misfit(f"{len(data)} bytes where fixed {name} has {size}")
            return data

        self._compiled[name] = check
        return check

    def _array(self, schema: Mapping[str, Any]) -> Check:
        check_item = self.compile(schema["items"])

        def check(value: Any) -> Any:
            if type(value) is not list:
                raise Misfit(f"expected an array, got {describe(value)}")
            prepared = []
            for index, item in enumerate(value):
                try:
                    prepared.append(check_item(item))
                except Misfit as misfit:
                    raise misfit.at(str(index)) from None
            return prepared

        return check

    def _map(self, schema: Mapping[str, Any]) -> Check:
        check_value = self.compile(schema["values"])

        def check(value: Any) -> Any:
            if type(value) is not dict:
                raise Misfit(f"expected an object (a map), got {describe(value)}")
            prepared = {}
            for key, item in value.items():
                try:
                    prepared[key] = check_value(item)
                except Misfit as misfit:
                    raise misfit.at(key) from None
            return prepared

        return check

    def _decimal(self, schema: Mapping[str, Any]) -> Check:
        self.has_bytes = True
        check = decimal_check(schema)
        if schema["type"] == "fixed":
            self._compiled[schema["name"]] = check
        return check

    def _primitive(self, kind: str) -> Check:
        if kind == "bytes":
            self.has_bytes = True
        return PRIMITIVE_CHECKS[kind]


def _branch_name(branch: Any) -> str:
    """The name fastavro's tuple notation gives a union branch: a named type's full name,
    else its type ("array", "map", "long")."""
    if isinstance(branch, str):
        return branch
    if branch["type"] in _NAMED:
        return str(branch["name"])
    return _branch_name(branch["type"])


def _tagged(name: str, check: Check) -> Check:
    return lambda value: (name, check(value))
