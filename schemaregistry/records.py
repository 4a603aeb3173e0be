"""The records of the `_schemas` topic, byte for byte as Confluent Schema Registry writes them.

Keys are compact JSON with a fixed field order: compaction compares key bytes, so a key written
by another registry (Confluent's, Karapace) must equal ours for the same thing. A null value is
a tombstone: the permanent delete of what the key names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

GLOBAL = None  # the subject of the registry-wide config and mode


@dataclass(frozen=True)
class Reference:
    """A schema that this one uses: `name` is how the schema refers to it (an Avro full name,
    a Protobuf import path, a JSON Schema $ref), `subject` and `version` where it is registered."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class SchemaValue:
    """One version of a subject (keytype SCHEMA)."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = field(default=())
    deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":  # absent for Avro, as up to Confluent 7.x
            value["schemaType"] = self.schema_type
        if self.references:
            value["references"] = [ref.to_json() for ref in self.references]
        value["schema"] = self.schema
        value["deleted"] = self.deleted
        return value


@dataclass(frozen=True)
class SchemaKey:
    subject: str
    version: int

    def encode(self) -> bytes:
        return _compact({"keytype": "SCHEMA", "subject": self.subject, "version": self.version, "magic": 1})


@dataclass(frozen=True)
class ConfigKey:
    """The compatibility level of a subject, or the global one (subject None)."""

    subject: str | None

    def encode(self) -> bytes:
        return _compact({"keytype": "CONFIG", "subject": self.subject, "magic": 0})


@dataclass(frozen=True)
class ModeKey:
    subject: str | None

    def encode(self) -> bytes:
        return _compact({"keytype": "MODE", "subject": self.subject, "magic": 0})


@dataclass(frozen=True)
class DeleteSubjectKey:
    """A soft delete of every version of a subject up to `version` (in the value)."""

    subject: str

    def encode(self) -> bytes:
        return _compact({"keytype": "DELETE_SUBJECT", "subject": self.subject, "magic": 0})


Key = SchemaKey | ConfigKey | ModeKey | DeleteSubjectKey
Value = SchemaValue | str | int | None  # SCHEMA, CONFIG level or MODE, DELETE_SUBJECT version, tombstone


@dataclass(frozen=True)
class Record:
    key: Key
    value: Value

    def encode(self) -> tuple[bytes, bytes | None]:
        return self.key.encode(), encode_value(self.key, self.value)


def encode_value(key: Key, value: Value) -> bytes | None:
    if value is None:
        return None
    if isinstance(key, SchemaKey):
        assert isinstance(value, SchemaValue)
        return _compact(value.to_json())
    if isinstance(key, ConfigKey):
        return _compact({"compatibilityLevel": value})
    if isinstance(key, ModeKey):
        return _compact({"mode": value})
    return _compact({"subject": key.subject, "version": value})


def decode(key_bytes: bytes | None, value_bytes: bytes | None) -> Record | None:
    """The record, or None for what this registry does not keep (NOOP keys, unknown key
    types a newer registry may write, and records that are not JSON at all)."""
    try:
        key = json.loads(key_bytes or b"null")
        value = None if value_bytes is None else json.loads(value_bytes)
        return _decoded(key, value) if isinstance(key, dict) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _decoded(key: dict[str, Any], value: Any) -> Record | None:
    keytype, subject = key.get("keytype"), key.get("subject")
    if keytype == "SCHEMA" and isinstance(subject, str):
        return Record(SchemaKey(subject, int(key["version"])), _schema_value(value))
    if keytype == "CONFIG":
        return Record(ConfigKey(subject), None if value is None else str(value["compatibilityLevel"]))
    if keytype == "MODE":
        return Record(ModeKey(subject), None if value is None else str(value["mode"]))
    if keytype == "DELETE_SUBJECT" and isinstance(subject, str):
        return Record(DeleteSubjectKey(subject), None if value is None else int(value["version"]))
    return None


def _schema_value(value: dict[str, Any] | None) -> SchemaValue | None:
    if value is None:
        return None
    return SchemaValue(
        subject=value["subject"],
        version=int(value["version"]),
        id=int(value["id"]),
        schema=value["schema"],
        schema_type=value.get("schemaType") or "AVRO",
        references=tuple(
            Reference(ref["name"], ref["subject"], int(ref["version"]))
            for ref in value.get("references") or ()
        ),
        deleted=bool(value.get("deleted", False)),
    )


def _compact(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
