"""One record of API v3's produce: its JSON (`{"partition_id"?, "headers": [{"name", "value"
(base64)}], "key"?, "value"?, "timestamp"?}`, key and value as `{"type": "BINARY|JSON|STRING|
AVRO|JSONSCHEMA|PROTOBUF", "data", "schema_id"|"schema_version"|"subject"|"schema"?}`), the
record bytes it makes, and its reply (`{"error_code": 200, "cluster_id", "topic_name",
"partition_id", "offset", "timestamp", "key": {"type", "size", ...}, "value": {...}}`, or
`{"error_code", "message"}` for the record that failed).

Schemas are found as Confluent's proxy finds them: by id, or the text registered under the
subject (TOPIC-key/TOPIC-value unless `subject` names another), or a version of the subject
(the latest when only the type or the subject is given). No type and no schema is BINARY.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from restproxy import errors
from restproxy.clients import Credentials
from restproxy.embedded import Format, Schema, to_bytes
from restproxy.errors import RestError
from restproxy.produce import Delivery
from restproxy.schemas import SchemaSource, subject

MAX_INT32 = 2**31 - 1
MAX_HEADERS = 1000


class RecordData(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Format | None = None
    data: Any = None
    schema_id: int | None = Field(default=None, ge=0, le=MAX_INT32)
    schema_version: int | None = Field(default=None, ge=-1, le=MAX_INT32)
    subject: str | None = Field(default=None, min_length=1, max_length=1000)
    schema_text: str | None = Field(default=None, alias="schema")

    def schema_key(self) -> tuple[object, ...]:
        return (self.type, self.schema_id, self.schema_version, self.subject, self.schema_text)

    def has_schema(self) -> bool:
        """Whether the data names a schema (a schema type alone means the subject's latest)."""
        if self.type is not None:
            return self.type.schema_type is not None
        return any(part is not None for part in self.schema_key()[1:])


class RecordHeader(BaseModel):
    name: str = Field(max_length=10_000)
    value: str | None = None


class RecordBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    partition_id: int | None = Field(default=None, ge=0, le=MAX_INT32)
    headers: list[RecordHeader] = Field(default=[], max_length=MAX_HEADERS)
    key: RecordData | None = None
    value: RecordData | None = None
    timestamp: datetime | None = None


def resolve_schema(
    source: SchemaSource, credentials: Credentials | None, topic: str, is_key: bool, data: RecordData
) -> Schema:
    """The schema a record's key or value names (a blocking registry call: in a worker thread)."""
    name = data.subject or subject(topic, is_key)
    if data.schema_id is not None:
        return source.by_id(credentials, data.schema_id, data.type)
    if data.schema_text is not None:
        if data.type is None or data.type.schema_type is None:
            raise errors.invalid_schema("a schema needs its type: AVRO, JSONSCHEMA or PROTOBUF")
        return source.registered(credentials, name, data.schema_text, data.type)
    version: int | str = "latest"
    if data.schema_version is not None and data.schema_version != -1:
        version = data.schema_version
    return source.by_version(credentials, name, version, data.type)


def encoded(data: RecordData | None, schema: Schema | None) -> tuple[bytes | None, dict[str, Any] | None]:
    """The key's or value's bytes and what its reply says of them (type, size, schema)."""
    if data is None:
        return None, None
    fmt = schema.format if schema is not None else data.type or Format.BINARY
    raw = to_bytes(fmt, data.data, schema)
    reply: dict[str, Any] = {"type": fmt.value, "size": 0 if raw is None else len(raw)}
    if schema is not None:
        reply.update(subject=schema.subject, schema_id=schema.schema_id, schema_version=schema.version)
    return raw, reply


def headers(body: RecordBody) -> tuple[tuple[str, bytes | None], ...]:
    found = []
    for header in body.headers:
        try:
            value = None if header.value is None else base64.b64decode(header.value, validate=True)
        except (binascii.Error, ValueError):
            raise errors.serialization(f"header {header.name!r}: value is not a base64 string.") from None
        found.append((header.name, value))
    return tuple(found)


def timestamp_ms(body: RecordBody) -> int:
    """The record's timestamp in ms since the epoch (0: the time it is produced)."""
    if body.timestamp is None:
        return 0
    moment = body.timestamp if body.timestamp.tzinfo is not None else body.timestamp.replace(tzinfo=UTC)
    millis = int(moment.timestamp() * 1000)
    if millis <= 0:
        raise RestError(400, 400, f"timestamp {body.timestamp.isoformat()} is not after 1970")
    return millis


def reply(
    cluster_id: str, topic: str, report: Delivery, key: dict[str, Any] | None, value: dict[str, Any] | None
) -> dict[str, Any]:
    """A delivered record's reply."""
    written = datetime.fromtimestamp((report.timestamp_ms or 0) / 1000, UTC)
    return {
        "error_code": 200,
        "cluster_id": cluster_id,
        "topic_name": topic,
        "partition_id": report.partition,
        "offset": report.offset,
        "timestamp": written.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "key": key,
        "value": value,
    }


def error_reply(error: RestError) -> dict[str, Any]:
    return {"error_code": error.error_code, "message": error.message}
