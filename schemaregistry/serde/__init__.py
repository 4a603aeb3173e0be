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

Modules: one codec per schema type (`avro` with `avro_checks` and `avro_primitives`,
`protobuf`, `json_schema`) and `errors`, which they share; this one picks a registered
schema's codec and frames what it encodes.
"""

import functools
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from schemaregistry.serde.avro import AvroCodec
from schemaregistry.serde.errors import NoSuchMessage, RecordDoesNotFit
from schemaregistry.serde.json_schema import JsonSchemaCodec
from schemaregistry.serde.protobuf import ProtobufCodec
from schemaregistry.wire import BadPayload, frame

if TYPE_CHECKING:
    from schemaregistry.schemas import ParsedSchema

__all__ = [
    "AvroCodec",
    "BadPayload",
    "Encoder",
    "JsonSchemaCodec",
    "NoSuchMessage",
    "ProtobufCodec",
    "RecordDoesNotFit",
    "codec_for",
    "decode",
]

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
