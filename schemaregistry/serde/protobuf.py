"""Protobuf bodies for the messages of one schema file, with protobuf's json_format, and which
field of a value it refused."""

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from schemaregistry.serde.errors import TOO_DEEP, Misfit, NoSuchMessage, RecordDoesNotFit, describe
from schemaregistry.wire import BadPayload

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor
    from google.protobuf.descriptor_pb2 import FileDescriptorSet
    from google.protobuf.message import Message

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
        from google.protobuf import descriptor_pool, json_format, message_factory
        from google.protobuf.message import DecodeError

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
            raise RecordDoesNotFit("/", f"expected an object (message {full_name}), got {describe(value)}")
        try:
            message = self._json.ParseDict(value, cls(), descriptor_pool=self.pool)
        except self._json.ParseError as error:
            try:
                misfit = self._misfit(cls.DESCRIPTOR, value, error)
            except RecursionError:
                misfit = Misfit(TOO_DEEP)
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

    def _misfit(self, descriptor: "Descriptor", value: dict[str, Any], error: Exception) -> Misfit:
        """Which field made json_format refuse `value` (with `error`): its error names the
        field but not the path to it (nor an array index), so the value is parsed again one
        field, map entry and array element at a time, down to the first one refused. Only for
        values already refused, so its cost is no concern."""
        fields = {field.name: field for field in descriptor.fields}
        fields.update({field.json_name: field for field in descriptor.fields})
        for key, item in value.items():
            field = fields.get(key)
            if field is None:
                return Misfit(f"not a field of message {descriptor.full_name}").at(key)
            field_error = self._refusal(descriptor, {key: item})
            if field_error is not None:
                return self._field_misfit(descriptor, field, key, item, field_error).at(key)
        return Misfit(_parse_reason(error))  # each field parses alone: e.g. two of one oneof

    def _field_misfit(
        self, descriptor: "Descriptor", field: "FieldDescriptor", key: str, item: Any, error: Exception
    ) -> Misfit:
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
        return Misfit(_parse_reason(error))

    def _element_misfit(self, field: "FieldDescriptor", item: Any, error: Exception) -> Misfit:
        """One value of a field: a message's fields are looked into, unless it is one of the
        well-known types (Timestamp, Struct, wrappers...), whose JSON forms are their own."""
        message = field.message_type
        if message is None or type(item) is not dict or message.file.name.startswith("google/protobuf/"):
            return Misfit(_parse_reason(error))
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
