"""API v2's produce, as Confluent's proxy serves it: POST /topics/{topic} and
/topics/{topic}/partitions/{partition} with `{"records": [{"key", "value", "partition"?}],
"key_schema"|"key_schema_id", "value_schema"|"value_schema_id"}`.

The request's Content-Type names the embedded format (binary, json, avro, jsonschema,
protobuf); any other is 415. The whole request is checked and every record encoded before one
is sent, so a bad record (bad base64, a value its schema cannot hold: 422) sends nothing; the
records sent are answered each with its partition and offset or its own Kafka error. Schema
texts are registered under TOPIC-key and TOPIC-value; the answer names the ids used.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from restproxy import errors, v2_topics
from restproxy.bodies import media_type, parsed_json, unsupported_media_type, validated
from restproxy.clients import Credentials
from restproxy.cluster import metadata, topic_of
from restproxy.context import ProxyContext
from restproxy.embedded import Format, Schema, to_bytes
from restproxy.errors import RestError
from restproxy.produce import Delivery, OutgoingRecord, deliveries, send
from restproxy.schemas import SchemaSource, subject
from restproxy.v2_topics import V2Response

MAX_INT32 = 2**31 - 1
FORMATS = {
    "application/vnd.kafka.binary.v2+json": Format.BINARY,
    "application/vnd.kafka.json.v2+json": Format.JSON,
    "application/vnd.kafka.avro.v2+json": Format.AVRO,
    "application/vnd.kafka.jsonschema.v2+json": Format.JSONSCHEMA,
    "application/vnd.kafka.protobuf.v2+json": Format.PROTOBUF,
}


class ProduceRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")
    key: Any = None
    value: Any = None
    partition: int | None = Field(default=None, ge=0, le=MAX_INT32)


class ProduceBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    key_schema: str | None = None
    key_schema_id: int | None = Field(default=None, ge=0, le=MAX_INT32)
    value_schema: str | None = None
    value_schema_id: int | None = Field(default=None, ge=0, le=MAX_INT32)
    records: list[ProduceRecord]


_BODY_SCHEMA = {  # for /openapi.json: the body is read by the route, not by FastAPI
    "type": "object",
    "required": ["records"],
    "properties": {
        "key_schema": {"type": "string"},
        "key_schema_id": {"type": "integer"},
        "value_schema": {"type": "string"},
        "value_schema_id": {"type": "integer"},
        "records": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"key": {}, "value": {}, "partition": {"type": "integer", "minimum": 0}},
            },
        },
    },
}
_OPENAPI = {
    "requestBody": {"required": True, "content": {name: {"schema": _BODY_SCHEMA} for name in FORMATS}}
}


def routes(app: FastAPI, context: ProxyContext) -> None:
    producing = _Producing(context)

    @app.post("/topics/{topic}", response_class=V2Response, openapi_extra=_OPENAPI, tags=["v2"])
    async def produce_to_topic(topic: str, request: Request) -> V2Response:
        return await producing.produce(request, topic, None)

    @app.post(
        "/topics/{topic}/partitions/{partition}",
        response_class=V2Response,
        openapi_extra=_OPENAPI,
        tags=["v2"],
    )
    async def produce_to_partition(topic: str, partition: int, request: Request) -> V2Response:
        return await producing.produce(request, topic, partition)

    v2_topics.routes(app, context)


class _Producing:
    def __init__(self, context: ProxyContext) -> None:
        self.context = context
        self.schemas = SchemaSource(context.registry_url)

    async def produce(self, request: Request, topic: str, partition: int | None) -> V2Response:
        fmt = FORMATS.get(media_type(request))
        if fmt is None:
            raise unsupported_media_type()
        body = _body(await request.body(), self.context.settings.max_records_per_produce)
        credentials = self.context.credentials(request)
        found = await metadata(self.context, credentials)
        partitions = len(topic_of(found, topic, lambda: errors.topic_not_found(topic)).partitions)
        _check_partitions(body, partition, partitions)
        key_schema, value_schema = await run_in_threadpool(self._schemas, credentials, topic, fmt, body)
        records = await run_in_threadpool(_encoded, fmt, body, partition, key_schema, value_schema)
        producer = self.context.clients.producer(credentials)
        reports = await deliveries([await send(producer, topic, record) for record in records])
        return V2Response(
            {
                "key_schema_id": None if key_schema is None else key_schema.schema_id,
                "value_schema_id": None if value_schema is None else value_schema.schema_id,
                "offsets": [_offset(report) for report in reports],
            }
        )

    def _schemas(
        self, credentials: Credentials | None, topic: str, fmt: Format, body: ProduceBody
    ) -> tuple[Schema | None, Schema | None]:
        """The key's and value's schemas of a schema format, found or registered (a blocking
        call); 42201/42202 when records have keys or values and there is no schema for them."""
        if fmt.schema_type is None:
            return None, None
        has_key_schema = body.key_schema is not None or body.key_schema_id is not None
        if not has_key_schema and any(r.key is not None for r in body.records):
            raise errors.key_schema_missing()
        has_value_schema = body.value_schema is not None or body.value_schema_id is not None
        if not has_value_schema and any(r.value is not None for r in body.records):
            raise errors.value_schema_missing()
        key = self._schema(credentials, subject(topic, True), fmt, body.key_schema, body.key_schema_id)
        value = self._schema(credentials, subject(topic, False), fmt, body.value_schema, body.value_schema_id)
        return key, value

    def _schema(
        self, credentials: Credentials | None, name: str, fmt: Format, text: str | None, schema_id: int | None
    ) -> Schema | None:
        if schema_id is not None:
            return self.schemas.by_id(credentials, schema_id, fmt)
        if text is not None:
            return self.schemas.registered(credentials, name, text, fmt)
        return None


def _body(raw: bytes, max_records: int) -> ProduceBody:
    value = parsed_json(raw)
    records = value.get("records") if isinstance(value, dict) else None
    if isinstance(records, list) and len(records) > max_records:
        message = f"records: {len(records)} records, more than the {max_records} a request may hold"
        raise RestError(422, 42208, message)
    return validated(ProduceBody, value)


def _check_partitions(body: ProduceBody, partition: int | None, partitions: int) -> None:
    """40402 for a partition the topic does not have (the URL's, else any record's)."""
    asked = [partition] if partition is not None else [r.partition for r in body.records]
    for number in asked:
        if number is not None and not 0 <= number < partitions:
            raise errors.partition_not_found(number)


def _encoded(
    fmt: Format, body: ProduceBody, partition: int | None, key: Schema | None, value: Schema | None
) -> list[OutgoingRecord]:
    """Every record's bytes (a request's worth of encoding: in a worker thread)."""
    return [
        OutgoingRecord(
            to_bytes(fmt, record.key, key),
            to_bytes(fmt, record.value, value),
            partition if partition is not None else record.partition,
        )
        for record in body.records
    ]


def _offset(report: Delivery) -> dict[str, Any]:
    if report.error is not None:
        error = report.error
        return {"partition": None, "offset": None, "error_code": error.error_code, "error": error.message}
    return {"partition": report.partition, "offset": report.offset, "error_code": None, "error": None}
