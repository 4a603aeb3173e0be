"""What a service accepts of a request before any handler sees it: the content types it
consumes (else 415) and a bounded body (else 413), so a client cannot make it read an unbounded
request into memory. Refusals carry Confluent's error body, `{"error_code", "message"}`."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(HTTPException):
    """An HTTPException, so that the framework's body reading passes it on as a 413."""

    def __init__(self) -> None:
        super().__init__(413, "Request Entity Too Large")


class RequestLimits:
    def __init__(
        self, app: ASGIApp, max_body_bytes: int, content_types: tuple[str, ...], error_media_type: str
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.content_types = content_types
        self.error_media_type = error_media_type.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        content_type = headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip().lower()
        if content_type and content_type not in self.content_types:
            await refuse(send, 415, "HTTP 415 Unsupported Media Type", media_type=self.error_media_type)
            return
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_body_bytes:
            await refuse(send, 413, "HTTP 413 Request Entity Too Large", media_type=self.error_media_type)
            return
        await self._bounded(scope, receive, send)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, counting what a body without a length sends."""
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes:
                raise BodyTooLarge()
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await refuse(send, 413, "HTTP 413 Request Entity Too Large", media_type=self.error_media_type)


async def refuse(
    send: Send,
    status: int,
    message: str,
    headers: list[tuple[bytes, bytes]] | None = None,
    media_type: bytes = b"application/json",
) -> None:
    """Answer with Confluent's error body before the application sees the request."""
    body = json.dumps({"error_code": status, "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", media_type),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
