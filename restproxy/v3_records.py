"""API v3's produce: POST /v3/clusters/{c}/topics/{t}/records, one record, or a stream of
concatenated records in one chunked body, as Confluent Cloud's streaming produce takes them.

A stream is read as it arrives and each record is sent as soon as it is read; the replies go
back in the records' order, each as soon as its record is delivered (and those before it), on
one HTTP 200 whose body is one JSON reply a line. A record that fails gets its error object in
its place and the stream goes on; a stream that stops being JSON gets one last error and ends.
At most `max_records_per_produce` records of a stream are in flight: past that, reading waits.

A body sent with a length that holds one record is answered with that record's reply alone,
its HTTP status the reply's (200, or the error's).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from restproxy import errors, v3_record
from restproxy.bodies import media_type, parsed_json, unsupported_media_type, validated
from restproxy.clients import Credentials
from restproxy.cluster import metadata, topic_of
from restproxy.embedded import MAX_RECORD_BYTES, Schema
from restproxy.errors import RestError
from restproxy.jsonstream import NotAnObject, ObjectSplitter, ObjectTooLarge
from restproxy.produce import Delivery, OutgoingRecord, delivery, send
from restproxy.schemas import SchemaSource
from restproxy.v3_common import V3, topic_not_found

log = logging.getLogger("restproxy")
MAX_OBJECT_BYTES = 2 * MAX_RECORD_BYTES  # one record's JSON: its data, base64 or not, and the rest
MAX_SCHEMAS_PER_STREAM = 256
MAX_REPLIES_PER_WRITE = 100  # lines in one chunk of the reply: few writes, none large
_OPENAPI = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}
}


class ReplyStream(StreamingResponse):
    """Starlette's StreamingResponse, without its wait for a disconnect: on an ASGI 2.3 server
    that wait reads the request's messages, which are the records being replied to. The reader
    of the records sees a disconnect itself."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.stream_response(send)


@dataclass(frozen=True)
class Pending:
    """A record read: sent (its delivery to come) or refused (its error)."""

    sent: asyncio.Future[Delivery] | None
    error: RestError | None = None
    key: dict[str, Any] | None = None
    value: dict[str, Any] | None = None


def routes(app: FastAPI, v3: V3) -> None:
    schemas = SchemaSource(v3.context.registry_url)

    @app.post("/v3/clusters/{cluster_id}/topics/{topic}/records", openapi_extra=_OPENAPI, tags=["v3"])
    async def produce_records(cluster_id: str, topic: str, request: Request) -> Response:
        if media_type(request) != "application/json":
            raise unsupported_media_type()
        credentials = await v3.checked(request, cluster_id)
        partitions = len(topic_of(await metadata(v3.context, credentials), topic, topic_not_found).partitions)
        stream = _Stream(v3, schemas, credentials, cluster_id, topic, partitions)
        if "chunked" in request.headers.get("transfer-encoding", "").lower():
            return ReplyStream(stream.replies(request.stream()), media_type="application/json")
        return await stream.whole(await request.body())


class _Stream:
    """One request's records: read, encoded and sent one by one, replied to in order."""

    def __init__(
        self,
        v3: V3,
        schemas: SchemaSource,
        credentials: Credentials | None,
        cluster_id: str,
        topic: str,
        partitions: int,
    ) -> None:
        self.schemas = schemas
        self.credentials = credentials
        self.cluster_id = cluster_id
        self.topic = topic
        self.partitions = partitions
        self.producer = v3.context.clients.producer(credentials)
        self.in_flight = v3.context.settings.max_records_per_produce
        self._resolved: dict[tuple[object, ...], Schema] = {}

    async def whole(self, body: bytes) -> Response:
        """A body read whole: one record's reply with its own status, or the stream of replies."""
        splitter = ObjectSplitter(MAX_OBJECT_BYTES)
        try:
            objects = splitter.feed(body)
            splitter.finish()
        except (NotAnObject, ObjectTooLarge) as exc:
            raise RestError(400, 400, f"Error processing JSON: {exc}") from None
        if not objects:
            raise RestError(400, 400, "Null input provided. Data is required.")
        if len(objects) > 1:
            return ReplyStream(self.replies(_once(body)), media_type="application/json")
        answer, status = await self.reply(await self.record(objects[0]))
        return JSONResponse(answer, status_code=status)

    async def replies(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The replies, one JSON object a line, while a task reads and sends the records. The
        replies of records already delivered go out together, in one write."""
        queue = _Queue(self.in_flight)
        reader = asyncio.create_task(self._read(chunks, queue))
        try:
            while (pending := await queue.first()) is not None:
                lines: list[bytes] = []
                while pending is not None:
                    answer, _ = await self.reply(pending)
                    lines.append((json.dumps(answer) + "\r\n").encode())
                    pending = queue.next_ready() if len(lines) < MAX_REPLIES_PER_WRITE else None
                queue.release(len(lines))
                yield b"".join(lines)
        finally:
            reader.cancel()

    async def _read(self, chunks: AsyncIterator[bytes], queue: _Queue) -> None:
        splitter = ObjectSplitter(MAX_OBJECT_BYTES)
        try:
            async for chunk in chunks:
                for raw in splitter.feed(chunk):
                    await queue.room()
                    queue.put(await self.record(raw))
            splitter.finish()
        except ClientDisconnect:
            pass
        except (NotAnObject, ObjectTooLarge) as exc:
            queue.put(Pending(None, RestError(400, 400, f"Error processing JSON: {exc}")))
        except HTTPException as exc:  # the body limit, reached in the middle of the stream
            queue.put(
                Pending(
                    None, RestError(exc.status_code, exc.status_code, f"HTTP {exc.status_code} {exc.detail}")
                )
            )
        except Exception:
            log.exception("reading the records of a produce stream to %s", self.topic)
            queue.put(Pending(None, RestError(500, 500, "Internal Server Error")))
        finally:
            queue.close()

    async def record(self, raw: bytes) -> Pending:
        """Parse, encode and send one record; its error if it cannot be sent."""
        try:
            body = validated(v3_record.RecordBody, parsed_json(raw))
            if body.partition_id is not None and body.partition_id >= self.partitions:
                raise errors.partition_not_found(body.partition_id)
            key, key_reply = v3_record.encoded(body.key, await self._schema(body.key, True))
            value, value_reply = v3_record.encoded(body.value, await self._schema(body.value, False))
            outgoing = OutgoingRecord(
                key, value, body.partition_id, v3_record.headers(body), v3_record.timestamp_ms(body)
            )
        except RestError as exc:
            return Pending(None, exc)
        return Pending(await send(self.producer, self.topic, outgoing), None, key_reply, value_reply)

    async def reply(self, pending: Pending) -> tuple[dict[str, Any], int]:
        """The record's reply and its HTTP status (200, or its error's)."""
        error = pending.error
        if pending.sent is not None:
            report = await delivery(pending.sent)
            if report.error is None:
                return v3_record.reply(self.cluster_id, self.topic, report, pending.key, pending.value), 200
            error = report.error
        error = error or RestError(500, 500, "record not sent")
        return v3_record.error_reply(error), error.http_status

    async def _schema(self, data: v3_record.RecordData | None, is_key: bool) -> Schema | None:
        """The schema the data names, asked of the registry once per stream."""
        if data is None or not data.has_schema():
            return None
        key = (is_key, *data.schema_key())
        schema = self._resolved.get(key)
        if schema is None:
            schema = await run_in_threadpool(
                v3_record.resolve_schema, self.schemas, self.credentials, self.topic, is_key, data
            )
            if len(self._resolved) < MAX_SCHEMAS_PER_STREAM:
                self._resolved[key] = schema
        return schema


class _Queue:
    """The records of a stream read and not yet replied to, in order: at most `bound` of
    them (reading waits for room), the replies taken as their records are delivered."""

    def __init__(self, bound: int) -> None:
        self._pending: deque[Pending] = deque()
        self._room = asyncio.Semaphore(bound)
        self._changed = asyncio.Event()
        self._closed = False

    async def room(self) -> None:
        await self._room.acquire()

    def put(self, pending: Pending) -> None:
        self._pending.append(pending)
        self._changed.set()

    def close(self) -> None:
        self._closed = True
        self._changed.set()

    async def first(self) -> Pending | None:
        """The oldest record waiting for its reply; None once reading ended and all are replied to."""
        while not self._pending and not self._closed:
            self._changed.clear()
            await self._changed.wait()
        return self._pending.popleft() if self._pending else None

    def next_ready(self) -> Pending | None:
        """The next record, if it needs no waiting (delivered, or refused)."""
        if self._pending and (self._pending[0].sent is None or self._pending[0].sent.done()):
            return self._pending.popleft()
        return None

    def release(self, count: int) -> None:
        for _ in range(count):
            self._room.release()


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body
