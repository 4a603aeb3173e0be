"""Spark types for registry schemas: the type of a key or value column decoded with one.

Avro follows spark-avro's SchemaConverters, so a query moved from `from_avro` keeps its
types: int -> int, long -> bigint, float, double, boolean, string and enum -> string, bytes
and fixed -> binary, decimal -> decimal(p, s), date -> date, timestamp-millis/-micros ->
timestamp, local-timestamp-* -> timestamp_ntz, record -> struct, array -> array, map ->
map<string, ...>; a union with null is its other branch, nullable; [int, long] is bigint,
[float, double] double, any other union a struct of nullable member0, member1, ...

Protobuf follows spark-protobuf: messages are structs of nullable fields, repeated fields
arrays, maps maps, enums their names (string), google.protobuf.Timestamp a timestamp;
int32/sint32/sfixed32 -> int, int64/sint64/sfixed64 and uint32/fixed32 -> bigint,
uint64/fixed64 -> decimal(20, 0), so that no value is out of range.

JSON Schema: an object with properties is a struct of nullable fields, one with only
additionalProperties a map<string, ...>, an array with items an array; integer -> bigint,
number -> double, boolean, string; a type of null and one other is that type; anything
else (no type, mixed types, allOf...) is a string holding the value's JSON text.

Recursive schemas have no Spark type; they are refused, as spark-avro refuses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]
    from referencing._core import Resolver

    from schemaregistry.schemas import ParsedSchema

MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType holds at most 38 digits
TIMESTAMP_MESSAGE = "google.protobuf.Timestamp"


class UnsupportedSchema(ValueError):
    """A registry schema with no Spark type (recursive, a decimal too wide, map keys that
    are not strings...): the query fails when it is defined, naming the part at fault."""


def spark_type(schema: ParsedSchema) -> DataType:
    """The type a key or value decoded with `schema` has (for Protobuf, of its first message,
    the one Confluent's serializers write by default)."""
    if schema.schema_type == "AVRO":
        return avro_type(schema.parsed.fastavro, schema.parsed.named_schemas)
    if schema.schema_type == "PROTOBUF":
        from schemaregistry.serde import ProtobufCodec, codec_for

        codec = codec_for(schema)
        assert isinstance(codec, ProtobufCodec)
        return protobuf_type(codec.message_type([0]))
    if schema.schema_type == "JSON":
        return json_schema_type(schema.parsed.schema, schema.parsed.resolver, schema.parsed.specification)
    raise UnsupportedSchema(f"no Spark type for schemas of type {schema.schema_type}")


# --- Avro -----------------------------------------------------------------------------------------

AVRO_PRIMITIVES: dict[str, DataType] = {
    "null": NullType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}
AVRO_LOGICAL: dict[tuple[str, str], DataType] = {
    ("int", "date"): DateType(),
    ("long", "timestamp-millis"): TimestampType(),
    ("long", "timestamp-micros"): TimestampType(),
    ("long", "local-timestamp-millis"): TimestampNTZType(),
    ("long", "local-timestamp-micros"): TimestampNTZType(),
}
# unions of two numeric types spark-avro reads as the wider one
AVRO_NARROWED_UNIONS = {frozenset({"int", "long"}): LongType(), frozenset({"float", "double"}): DoubleType()}


def avro_type(schema: Any, named: Mapping[str, Any]) -> DataType:
    """The Spark type of a fastavro-parsed schema whose named types are in `named`."""
    return _AvroTypes(named).of(schema)[0]


def avro_branches(branches: list[Any]) -> list[Any]:
    """A union's branches but null: the members of the struct a union without a single
    other branch becomes, in order."""
    return [branch for branch in branches if branch != "null"]


def avro_kind(schema: Any, named: Mapping[str, Any]) -> str:
    """The type of a schema with named types looked up: "record", "long", "enum"..."""
    if isinstance(schema, str):
        return schema if schema in AVRO_PRIMITIVES else avro_kind(named[schema], named)
    if isinstance(schema, list):
        return "union"
    kind = schema["type"]
    return kind if isinstance(kind, str) and kind not in named else avro_kind(kind, named)


class _AvroTypes:
    def __init__(self, named: Mapping[str, Any]) -> None:
        self._named = named
        self._path: list[str] = []  # the records being converted, for recursion

    def of(self, schema: Any) -> tuple[DataType, bool]:
        """(type, nullable)."""
        if isinstance(schema, list):
            return self._union(schema)
        if isinstance(schema, str):
            if schema in AVRO_PRIMITIVES:
                return AVRO_PRIMITIVES[schema], schema == "null"
            return self.of(self._named[schema])
        kind, logical = schema["type"], schema.get("logicalType")
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return _decimal(schema["precision"], schema.get("scale", 0)), False
        if (kind, logical) in AVRO_LOGICAL:
            return AVRO_LOGICAL[kind, logical], False
        if kind in ("record", "error"):
            return self._record(schema), False
        if kind == "enum":
            return StringType(), False
        if kind == "fixed":
            return BinaryType(), False
        if kind == "array":
            return ArrayType(*self.of(schema["items"])), False
        if kind == "map":
            return MapType(StringType(), *self.of(schema["values"])), False
        return self.of(kind)  # a primitive with attributes

    def _record(self, schema: Mapping[str, Any]) -> StructType:
        name = schema["name"]
        if name in self._path:
            raise UnsupportedSchema(f"record {name} refers to itself: a recursive schema has no Spark type")
        self._path.append(name)
        fields = [StructField(field["name"], *self.of(field["type"])) for field in schema["fields"]]
        self._path.pop()
        return StructType(fields)

    def _union(self, branches: list[Any]) -> tuple[DataType, bool]:
        nullable = len(branches) > len(avro_branches(branches))
        others = avro_branches(branches)
        if not others:
            return NullType(), True
        if len(others) == 1:
            return self.of(others[0])[0], nullable
        kinds = frozenset(avro_kind(branch, self._named) for branch in others)
        if len(others) == 2 and kinds in AVRO_NARROWED_UNIONS:
            return AVRO_NARROWED_UNIONS[kinds], nullable
        members = [StructField(f"member{i}", self.of(branch)[0], True) for i, branch in enumerate(others)]
        return StructType(members), nullable


def _decimal(precision: int, scale: int) -> DecimalType:
    if precision > MAX_DECIMAL_PRECISION:
        raise UnsupportedSchema(f"decimal({precision}, {scale}) is wider than Spark's 38 digits")
    return DecimalType(precision, scale)


# --- Protobuf -------------------------------------------------------------------------------------

# FieldDescriptor.TYPE_* numbers: descriptor.proto's FieldDescriptorProto.Type
_PROTOBUF_SCALARS: dict[int, DataType] = {
    1: DoubleType(),  # double
    2: FloatType(),  # float
    3: LongType(),  # int64
    4: DecimalType(20, 0),  # uint64
    5: IntegerType(),  # int32
    6: DecimalType(20, 0),  # fixed64
    7: LongType(),  # fixed32
    8: BooleanType(),  # bool
    9: StringType(),  # string
    12: BinaryType(),  # bytes
    13: LongType(),  # uint32
    14: StringType(),  # enum: its value's name
    15: IntegerType(),  # sfixed32
    16: LongType(),  # sfixed64
    17: IntegerType(),  # sint32
    18: LongType(),  # sint64
}


def protobuf_type(message: Descriptor, path: tuple[str, ...] = ()) -> StructType:
    """The struct of one message; `path` holds the messages it is nested in, for recursion."""
    if message.full_name in path:
        raise UnsupportedSchema(
            f"message {message.full_name} contains itself: a recursive schema has no Spark type"
        )
    inner = (*path, message.full_name)
    fields = [StructField(field.name, protobuf_field_type(field, inner)) for field in message.fields]
    return StructType(fields)


def protobuf_field_type(field: FieldDescriptor, path: tuple[str, ...]) -> DataType:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
        return MapType(protobuf_single_type(key, path), protobuf_single_type(value, path))
    single = protobuf_single_type(field, path)
    return ArrayType(single) if field.is_repeated else single


def protobuf_single_type(field: FieldDescriptor, path: tuple[str, ...]) -> DataType:
    """The type of one value of a field: of an element, for a repeated one."""
    message = field.message_type
    if message is None:
        return _PROTOBUF_SCALARS[field.type]
    if message.full_name == TIMESTAMP_MESSAGE:
        return TimestampType()
    return protobuf_type(message, path)


# --- JSON Schema ----------------------------------------------------------------------------------

_JSON_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "integer": LongType(),
    "number": DoubleType(),
    "boolean": BooleanType(),
}
JSON_TEXT = StringType()  # what a schema without one clear type becomes: the value's JSON text


def json_schema_type(schema: Any, resolver: Resolver[Any], specification: Any) -> DataType:
    """The Spark type of a JSON Schema document, its `$ref`s followed with `resolver`."""
    return _JsonTypes(specification).of(schema, resolver, ())


class _JsonTypes:
    def __init__(self, specification: Any) -> None:
        self._specification = specification

    def of(self, schema: Any, scope: Resolver[Any], path: tuple[int, ...]) -> DataType:
        from schemaregistry.schemas.json_schema import follow

        if not isinstance(schema, dict):
            return JSON_TEXT
        if id(schema) in path:
            raise UnsupportedSchema("the JSON Schema refers to itself: a recursive schema has no Spark type")
        inner = (*path, id(schema))
        if isinstance(schema.get("$ref"), str):
            target, target_scope = follow(schema, scope)
            return self.of(target, target_scope, inner)
        types = _json_types(schema)
        if types == {"object"}:
            return self._object(schema, scope, inner)
        if types == {"array"}:
            items = schema.get("items")
            return ArrayType(self._sub(items, scope, inner) if isinstance(items, dict) else JSON_TEXT)
        if len(types) == 1 and next(iter(types)) in _JSON_TYPES:
            return _JSON_TYPES[next(iter(types))]
        if types == {"integer", "number"}:
            return DoubleType()
        alternatives = _non_null_alternatives(schema)
        if not types and len(alternatives) == 1:
            return self._sub(alternatives[0], scope, inner)
        return JSON_TEXT

    def _object(self, schema: Mapping[str, Any], scope: Resolver[Any], path: tuple[int, ...]) -> DataType:
        properties = schema.get("properties")
        if isinstance(properties, dict) and properties:
            return StructType(
                [StructField(name, self._sub(sub, scope, path)) for name, sub in properties.items()]
            )
        additional = schema.get("additionalProperties")
        values = self._sub(additional, scope, path) if isinstance(additional, dict) else JSON_TEXT
        return MapType(StringType(), values)

    def _sub(self, schema: Any, scope: Resolver[Any], path: tuple[int, ...]) -> DataType:
        from schemaregistry.schemas.json_schema import enter

        return self.of(schema, enter(schema, scope, self._specification), path)


def _json_types(schema: Mapping[str, Any]) -> set[str]:
    """The types a schema allows but null: from `type`, else guessed from the keywords an
    object or an array has, or from enum/const values that are all strings."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared} - {"null"} or {"null"}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str) and t != "null"} or {"null"}
    if "properties" in schema or "additionalProperties" in schema:
        return {"object"}
    if "items" in schema:
        return {"array"}
    values = schema.get("enum", [schema["const"]] if "const" in schema else [])
    if values and all(isinstance(value, str) for value in values):
        return {"string"}
    return set()


def _non_null_alternatives(schema: Mapping[str, Any]) -> list[Any]:
    """The choices of an anyOf or oneOf that are not just {"type": "null"}."""
    choices = schema.get("anyOf") or schema.get("oneOf") or []
    return [choice for choice in choices if not (isinstance(choice, dict) and choice.get("type") == "null")]


# --- Spark to Avro, for auto.register.schemas -----------------------------------------------------

_AVRO_OF_SPARK: dict[str, Any] = {
    "boolean": "boolean",
    "tinyint": "int",
    "smallint": "int",
    "int": "int",
    "bigint": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "bytes",
    "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},
    "timestamp_ntz": {"type": "long", "logicalType": "local-timestamp-micros"},
}


def avro_schema_for(data_type: DataType, name: str = "topLevelRecord", namespace: str = "") -> Any:
    """The Avro schema spark-avro's to_avro derives from a Spark type (records named after
    their fields, in namespaces of their parents', from topLevelRecord), but that nullable
    fields are ["null", type] with default null, so that the schema can evolve BACKWARD:
    a field added later has a default."""
    if isinstance(data_type, StructType):
        inner = f"{namespace}.{name}" if namespace else name
        fields = [_avro_field(field, inner) for field in data_type.fields]
        record: dict[str, Any] = {"type": "record", "name": name, "fields": fields}
        return {**record, "namespace": namespace} if namespace else record
    if isinstance(data_type, ArrayType):
        items = avro_schema_for(data_type.elementType, name, namespace)
        return {"type": "array", "items": ["null", items] if data_type.containsNull else items}
    if isinstance(data_type, MapType):
        if not isinstance(data_type.keyType, StringType):
            raise UnsupportedSchema(f"Avro maps have string keys, not {data_type.keyType.simpleString()}")
        values = avro_schema_for(data_type.valueType, name, namespace)
        return {"type": "map", "values": ["null", values] if data_type.valueContainsNull else values}
    if isinstance(data_type, DecimalType):
        precision, scale = data_type.precision, data_type.scale
        return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    if data_type.simpleString() not in _AVRO_OF_SPARK:
        raise UnsupportedSchema(f"no Avro type for {data_type.simpleString()}")
    return _AVRO_OF_SPARK[data_type.simpleString()]


def _avro_field(field: StructField, namespace: str) -> dict[str, Any]:
    schema = avro_schema_for(field.dataType, field.name, namespace)
    if field.nullable:
        return {"name": field.name, "type": ["null", schema], "default": None}
    return {"name": field.name, "type": schema}
