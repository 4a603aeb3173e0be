"""v2 consumer instances (Confluent's ConsumersResource): make one in a group, subscribe or
assign it, move its positions, fetch records in its embedded format, commit and read offsets,
delete it. The instances themselves live in restproxy.consumer_instances.

Answers are Confluent's: 204 for subscribe, assign, seek and delete; 200 `[]` for a commit;
records as `application/vnd.kafka.<format>.v2+json`, which the Accept header must ask for
(no embedded format in it means binary, as in Confluent's), else 406 and 40601."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any
from urllib.parse import quote

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from restproxy import errors
from restproxy.consumer_config import instance_config
from restproxy.consumer_instances import ConsumerInstances
from restproxy.context import ProxyContext
from restproxy.errors import RestError

V2 = "application/vnd.kafka.v2+json"
MAX_RESPONSE_BYTES = 8 << 20  # the most a fetch gives (Confluent's consumer.request.max.bytes is 64 MiB)
MAX_PARTITIONS = 10_000  # topics or partitions named in one request
MAX_QUERY_BODY_BYTES = 1 << 20  # GET .../offsets has a body, which the request limits do not bound
COMMITTED_TIMEOUT_S = 10.0
ACCEPTED_FORMAT = re.compile(r"application/vnd\.kafka\.(binary|json|avro|jsonschema|protobuf)\.v2\+json")
Topic = Annotated[str, Field(min_length=1, max_length=249, pattern=r"^[a-zA-Z0-9._-]+$")]  # Kafka's names
PartitionId = Annotated[int, Field(ge=0, le=2**31 - 1)]


class CreateConsumer(BaseModel):
    """Confluent's ConsumerInstanceConfig; the values are checked as its are (42204)."""

    model_config = ConfigDict(populate_by_name=True)
    name: str | None = None
    format: str | None = None
    auto_offset_reset: str | None = Field(None, alias="auto.offset.reset")
    auto_commit_enable: str | bool | None = Field(None, alias="auto.commit.enable")
    fetch_min_bytes: str | int | None = Field(None, alias="fetch.min.bytes")
    consumer_request_timeout_ms: str | int | None = Field(None, alias="consumer.request.timeout.ms")


class Subscription(BaseModel):
    topics: list[Topic] | None = Field(None, max_length=MAX_PARTITIONS)
    topic_pattern: str | None = Field(None, min_length=1, max_length=1000)


class TopicPartition(BaseModel):
    topic: Topic
    partition: PartitionId


class Partitions(BaseModel):
    partitions: list[TopicPartition] = Field(max_length=MAX_PARTITIONS)


class PartitionOffset(TopicPartition):
    offset: int = Field(ge=0, le=2**63 - 2)  # a commit stores offset + 1
    metadata: str | None = Field(None, max_length=4096)


class Offsets(BaseModel):
    offsets: list[PartitionOffset] = Field(max_length=MAX_PARTITIONS)


class CommitOffsets(BaseModel):
    offsets: list[PartitionOffset] | None = Field(None, max_length=MAX_PARTITIONS)


def v2(content: Any, media_type: str = V2) -> JSONResponse:
    return JSONResponse(content, media_type=media_type)


def asked_format(accept: str) -> str:
    """The embedded format an Accept header asks for: the most preferred one it names, binary
    when it names none (what Confluent's proxy serves to `*/*` and the bare v2 type)."""
    best, best_q = "binary", -1.0
    for item in accept.split(","):
        media, _, params = item.strip().partition(";")
        found = ACCEPTED_FORMAT.fullmatch(media.strip().lower())
        q = re.search(r"q=([0-9.]+)", params)
        weight = float(q.group(1)) if q and q.group(1).replace(".", "", 1).isdigit() else 1.0
        if found and weight > best_q:
            best, best_q = found.group(1), weight
    return best


def routes(app: FastAPI, context: ProxyContext) -> None:
    instances = ConsumerInstances(context.clients, context.registry_client(), context.settings)
    context.on_close.append(instances.close)
    base = "/consumers/{group}/instances/{name}"

    @app.post("/consumers/{group}", tags=["v2 consumers"])
    def create(group: str, request: Request, body: CreateConsumer | None = None) -> JSONResponse:
        asked = body or CreateConsumer.model_validate({})
        config = instance_config(
            asked.name,
            asked.format,
            asked.auto_offset_reset,
            asked.auto_commit_enable,
            asked.fetch_min_bytes,
            asked.consumer_request_timeout_ms,
        )
        name = instances.create(group, config, context.credentials(request))
        path = f"/consumers/{quote(group, safe='')}/instances/{quote(name, safe='')}"
        return v2({"instance_id": name, "base_uri": context.settings.advertised_url + path})

    @app.delete(base, status_code=204, tags=["v2 consumers"])
    def delete(group: str, name: str, request: Request) -> Response:
        instances.delete(group, name, context.credentials(request))
        return Response(status_code=204)

    @app.post(base + "/subscription", status_code=204, tags=["v2 consumers"])
    def subscribe(group: str, name: str, request: Request, body: Subscription) -> Response:
        with instances.use(group, name, context.credentials(request)) as instance:
            instance.subscribe(body.topics or [], None if body.topics else body.topic_pattern)
        return Response(status_code=204)

    @app.get(base + "/subscription", tags=["v2 consumers"])
    def subscription(group: str, name: str, request: Request) -> JSONResponse:
        with instances.use(group, name, context.credentials(request)) as instance:
            return v2({"topics": instance.subscription()})

    @app.delete(base + "/subscription", status_code=204, tags=["v2 consumers"])
    def unsubscribe(group: str, name: str, request: Request) -> Response:
        with instances.use(group, name, context.credentials(request)) as instance:
            instance.unsubscribe()
        return Response(status_code=204)

    @app.post(base + "/assignments", status_code=204, tags=["v2 consumers"])
    def assign(group: str, name: str, request: Request, body: Partitions) -> Response:
        with instances.use(group, name, context.credentials(request)) as instance:
            instance.assign([(p.topic, p.partition) for p in body.partitions])
        return Response(status_code=204)

    @app.get(base + "/assignments", tags=["v2 consumers"])
    def assignment(group: str, name: str, request: Request) -> JSONResponse:
        with instances.use(group, name, context.credentials(request)) as instance:
            found = instance.assignment()
        return v2({"partitions": [{"topic": t, "partition": p} for t, p in found]})

    _positions(app, instances, context, base)
    _records(app, instances, context, base)
    _offsets(app, instances, context, base)


def _positions(app: FastAPI, instances: ConsumerInstances, context: ProxyContext, base: str) -> None:
    @app.post(base + "/positions", status_code=204, tags=["v2 consumers"])
    def seek(group: str, name: str, request: Request, body: Offsets) -> Response:
        with instances.use(group, name, context.credentials(request)) as instance:
            instance.seek([(o.topic, o.partition, o.offset) for o in body.offsets])
        return Response(status_code=204)

    @app.post(base + "/positions/beginning", status_code=204, tags=["v2 consumers"])
    def seek_to_beginning(group: str, name: str, request: Request, body: Partitions) -> Response:
        with instances.use(group, name, context.credentials(request)) as instance:
            instance.seek([(p.topic, p.partition, OFFSET_BEGINNING) for p in body.partitions])
        return Response(status_code=204)

    @app.post(base + "/positions/end", status_code=204, tags=["v2 consumers"])
    def seek_to_end(group: str, name: str, request: Request, body: Partitions) -> Response:
        with instances.use(group, name, context.credentials(request)) as instance:
            instance.seek([(p.topic, p.partition, OFFSET_END) for p in body.partitions])
        return Response(status_code=204)


def _records(app: FastAPI, instances: ConsumerInstances, context: ProxyContext, base: str) -> None:
    @app.get(base + "/records", tags=["v2 consumers"])
    def records(
        group: str,
        name: str,
        request: Request,
        timeout: int = Query(-1, description="ms; at most the instance's consumer.request.timeout.ms"),
        max_bytes: int = Query(-1, description=f"bytes of keys and values; at most {MAX_RESPONSE_BYTES}"),
    ) -> JSONResponse:
        with instances.use(group, name, context.credentials(request)) as instance:
            asked = asked_format(request.headers.get("accept", ""))
            if asked != instance.format:
                raise errors.format_mismatch(instance.format, asked)
            wait_s = (
                instance.request_timeout_s
                if timeout <= 0
                else min(timeout / 1000, instance.request_timeout_s)
            )
            limit = MAX_RESPONSE_BYTES if max_bytes <= 0 else min(max_bytes, MAX_RESPONSE_BYTES)
            found = instance.fetch(wait_s, limit)
        return v2(found, f"application/vnd.kafka.{asked}.v2+json")


def _offsets(app: FastAPI, instances: ConsumerInstances, context: ProxyContext, base: str) -> None:
    @app.post(base + "/offsets", tags=["v2 consumers"])
    def commit(
        group: str,
        name: str,
        request: Request,
        body: CommitOffsets | None = None,
        asynchronous: bool = Query(False, alias="async"),
    ) -> JSONResponse:
        offsets = None if body is None or body.offsets is None else body.offsets
        with instances.use(group, name, context.credentials(request)) as instance:
            instance.commit(
                None if offsets is None else [(o.topic, o.partition, o.offset, o.metadata) for o in offsets],
                asynchronous,
            )
        return v2([])

    @app.get(
        base + "/offsets",
        tags=["v2 consumers"],
        openapi_extra={  # the body is read by hand (bounded), so FastAPI does not describe it
            "requestBody": {"content": {V2: {"schema": {"$ref": "#/components/schemas/Partitions"}}}}
        },
    )
    async def committed(group: str, name: str, request: Request) -> JSONResponse:
        """The body names the partitions (a GET with a body, as Confluent's)."""
        partitions = await _partitions_body(request)
        credentials = context.credentials(request)

        def read() -> list[dict[str, Any]]:
            with instances.use(group, name, credentials) as instance:
                return instance.committed([(p.topic, p.partition) for p in partitions], COMMITTED_TIMEOUT_S)

        return v2({"offsets": await run_in_threadpool(read)})


async def _partitions_body(request: Request) -> list[TopicPartition]:
    """The partitions a GET's body names, read no further than MAX_QUERY_BODY_BYTES; none is
    40402, as in Confluent's proxy."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_QUERY_BODY_BYTES:
            raise RestError(413, 413, "HTTP 413 Request Entity Too Large")
    if not body.strip():
        raise errors.partition_not_found()
    try:
        return Partitions.model_validate(json.loads(body)).partitions
    except ValidationError as error:
        raise RestError(422, 422, f"partitions: {error.errors()[0]['msg']}") from None
    except ValueError as error:  # malformed JSON is a 400, as everywhere in the proxy
        raise RestError(400, 400, f"Unexpected character: {error}") from None
