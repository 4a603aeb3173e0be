"""Protobuf schemas, as .proto text or as the base64 of a serialized FileDescriptorProto (what
confluent-kafka's ProtobufSerializer registers), compiled by protoc (grpcio-tools) into a
FileDescriptorSet: the same checks and name resolution `protoc` gives, well-known imports
(google/protobuf/*.proto) included without references. protoc refuses messages nested deeper
than 31 levels, so nothing later recurses deeply into a file."""

from __future__ import annotations

import base64
import binascii
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.message import DecodeError
from grpc_tools import protoc

from schemaregistry.schemas.model import InvalidSchema, ParsedSchema

WELL_KNOWN_INCLUDE = str(Path(protoc.__file__).parent / "_proto")  # google/protobuf/*.proto
DEFAULT_NAME = "default.proto"  # the schema's own file (Confluent calls it "default")
IMPORT_PATH = re.compile(r"[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*")
BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
MAX_ERROR_LINES = 5

# protoc runs in this process and writes its errors to file descriptor 2: one run at a time,
# with fd 2 pointed at a file for the run's duration.
_PROTOC = threading.Lock()


@dataclass(frozen=True)
class ProtobufParsed:
    """`files`: the schema's file and every file it imports, dependencies first."""

    files: descriptor_pb2.FileDescriptorSet

    @property
    def file(self) -> descriptor_pb2.FileDescriptorProto:
        return self.files.file[-1]


def parse(text: str, references: Mapping[str, str]) -> ParsedSchema:
    """`references` maps import paths to the text of the imported files (either form)."""
    sources: dict[str, str] = {}
    descriptors: list[descriptor_pb2.FileDescriptorProto] = []
    for path, referenced in references.items():
        if not IMPORT_PATH.fullmatch(path) or ".." in path.split("/"):
            raise InvalidSchema(f"reference name '{path}' is not a valid import path")
        descriptor = _descriptor(referenced)
        if descriptor is None:
            sources[path] = referenced
        else:
            descriptor.name = path  # imported by this path, whatever the client compiled it as
            descriptors.append(descriptor)
    name = _free_name(references)  # the schema's own file, whatever a client compiled it as
    main = _descriptor(text)
    if main is None:
        sources[name] = text
    else:
        main.name = name
        descriptors.append(main)
    files = _compile(name, sources, descriptors)
    if not (files.file[-1].message_type or files.file[-1].enum_type):
        raise InvalidSchema("Protobuf schema definition contains no type definitions")
    return ParsedSchema("PROTOBUF", text, _canonical(files.file[-1]), ProtobufParsed(files))


def file_descriptor_set(parsed: ParsedSchema) -> descriptor_pb2.FileDescriptorSet:
    """The schema's file and all it imports, dependencies first (a copy: callers may change it)."""
    copy = descriptor_pb2.FileDescriptorSet()
    copy.CopyFrom(_parsed(parsed).files)
    return copy


def serialized(parsed: ParsedSchema) -> str:
    """Base64 of the schema's FileDescriptorProto: GET ...?format=serialized, what
    confluent-kafka's Protobuf deserializer asks for."""
    return base64.b64encode(_parsed(parsed).file.SerializeToString(deterministic=True)).decode("ascii")


def _parsed(parsed: ParsedSchema) -> ProtobufParsed:
    if not isinstance(parsed.parsed, ProtobufParsed):
        raise ValueError(f"a {parsed.schema_type} schema has no file descriptors")
    return parsed.parsed


def _descriptor(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto `text` is the base64 of, or None for .proto text."""
    compact = text.strip()
    if len(compact) % 4 or not BASE64.fullmatch(compact):
        return None
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(compact, validate=True))
    except (binascii.Error, DecodeError):
        return None


def _free_name(references: Mapping[str, str]) -> str:
    name, number = DEFAULT_NAME, 0
    while name in references:
        number += 1
        name = f"default_{number}.proto"
    return name


def _compile(
    name: str, sources: Mapping[str, str], descriptors: list[descriptor_pb2.FileDescriptorProto]
) -> descriptor_pb2.FileDescriptorSet:
    """protoc on `name`: .proto texts are found in a source tree, descriptors in a
    --descriptor_set_in file, well-known files in grpcio-tools' include directory."""
    with tempfile.TemporaryDirectory(prefix="schema-") as work:
        tree = Path(work, "src")
        for path, source in sources.items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(source, encoding="utf-8")
        tree.mkdir(exist_ok=True)
        out = Path(work, "out.pb")
        arguments = [
            "protoc",
            f"--proto_path={tree}",
            f"--proto_path={WELL_KNOWN_INCLUDE}",
            f"--descriptor_set_out={out}",
            "--include_imports",
        ]
        if descriptors:
            given = Path(work, "in.pb")
            given.write_bytes(descriptor_pb2.FileDescriptorSet(file=descriptors).SerializeToString())
            arguments.append(f"--descriptor_set_in={given}")
        status, errors = _protoc([*arguments, name], Path(work, "errors"))
        if status != 0:
            errors = errors.replace(f"{tree}{os.sep}", "")  # name files by their import paths
            lines = [line for line in errors.splitlines() if line.strip()][:MAX_ERROR_LINES]
            raise InvalidSchema("; ".join(lines) or f"protoc failed with status {status}")
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


def _protoc(arguments: list[str], errors: Path) -> tuple[int, str]:
    with _PROTOC, errors.open("w+b") as capture:
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            status = protoc.main(arguments)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        return status, capture.read(64 * 1024).decode("utf-8", "replace")


def _messages(
    messages: Iterable[descriptor_pb2.DescriptorProto], depth: int
) -> Iterator[tuple[int, descriptor_pb2.DescriptorProto]]:
    """Every message, nested ones included, with its nesting depth (without recursion)."""
    stack = [(depth, message) for message in messages]
    while stack:
        level, message = stack.pop()
        yield level, message
        stack.extend((level + 1, nested) for nested in message.nested_type)


def _canonical(file: descriptor_pb2.FileDescriptorProto) -> str:
    """The file without what does not change the schema: its name, source locations, a
    syntax of proto2 said or not, and the json_name protoc fills in (a descriptor serialized by
    generated code has none)."""
    normal = descriptor_pb2.FileDescriptorProto()
    normal.CopyFrom(file)
    normal.ClearField("name")
    normal.ClearField("source_code_info")
    if normal.syntax == "proto2":  # protoc leaves proto2, the default, unsaid
        normal.ClearField("syntax")
    for _, message in _messages(normal.message_type, 1):
        for field in [*message.field, *message.extension]:
            if field.json_name == _json_name(field.name):
                field.ClearField("json_name")
    for field in normal.extension:
        if field.json_name == _json_name(field.name):
            field.ClearField("json_name")
    return text_format.MessageToString(normal)


def _json_name(name: str) -> str:
    """protoc's default json_name: lowerCamelCase, underscores dropped."""
    parts = name.split("_")
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])
