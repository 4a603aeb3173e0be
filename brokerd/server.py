"""The asyncio TCP listener: Kafka framing, per-connection ordering, and fault isolation.

One server per listener. Requests on one connection are answered in order, one at a time,
as Kafka does (clients pipeline and match responses by order and correlation id). Whatever a
client sends — garbage, a truncated frame, an absurd size, an unknown API, a request before
it authenticated, a wrong password — costs that client its connection and nothing else: the
broker logs it and keeps serving everyone. Until a SASL client is authenticated its frames
are bounded by `sasl.server.max.receive.size`, as in Kafka. A response that throttles its
client (a quota, `throttle_time_ms` > 0) leaves the connection unread for that long, as
Kafka mutes the channel (KIP-219).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct
from collections.abc import Awaitable, Callable

from kafka.protocol.api_key import ApiKey

from brokerd.api.request import Request
from brokerd.protocol.api_versions import is_supported
from brokerd.protocol.codec import (
    MalformedRequest,
    decode_request,
    encode_api_versions_unsupported,
    encode_response,
    peek_header,
)
from brokerd.security.authenticator import ConnectionAuthenticator, ConnectionRefused
from brokerd.security.listeners import Listener

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[dict | None]]
Authenticators = Callable[[Listener, str, ssl.SSLObject | None], ConnectionAuthenticator]
_SIZE = struct.Struct(">i")
SSL_HANDSHAKE_TIMEOUT_S = 10.0


class KafkaServer:
    def __init__(
        self,
        handlers: dict[int, Handler],
        listener: Listener,
        max_request_bytes: int,
        max_sasl_receive_bytes: int,
        ssl_context: ssl.SSLContext | None,
        authenticators: Authenticators,
    ):
        self.handlers = handlers
        self.listener = listener
        self.max_request_bytes = max_request_bytes
        self.max_sasl_receive_bytes = max_sasl_receive_bytes
        self.ssl_context = ssl_context
        self.authenticators = authenticators
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve,
            self.listener.host,
            self.listener.port,
            reuse_address=True,
            ssl=self.ssl_context,
            ssl_handshake_timeout=SSL_HANDSHAKE_TIMEOUT_S if self.ssl_context is not None else None,
        )

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # asyncio runs every connection's callback as a task
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        auth = self.authenticators(
            self.listener, peer[0] if peer else "", writer.get_extra_info("ssl_object")
        )
        try:
            close = False
            while not close:
                payload = await self._read_frame(reader, auth.authenticated)
                response, close, throttle_ms = await self.respond(payload, auth)
                if response is not None:
                    writer.write(response)
                    await writer.drain()
                if throttle_ms:
                    await asyncio.sleep(throttle_ms / 1000)
        except asyncio.IncompleteReadError:
            pass  # the client hung up, possibly mid-frame
        except (MalformedRequest, ConnectionRefused) as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("closing connection from %s after an internal error", peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _read_frame(self, reader: asyncio.StreamReader, authenticated: bool) -> bytes:
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        limit = self.max_request_bytes if authenticated else self.max_sasl_receive_bytes
        if not 0 < size <= limit:
            raise MalformedRequest(f"frame size {size} outside 1..{limit}")
        return await reader.readexactly(size)

    async def respond(
        self, payload: bytes, auth: ConnectionAuthenticator
    ) -> tuple[bytearray | None, bool, int]:
        """The response to one frame (None for acks=0 produce), whether to close after it and
        how long to leave the connection unread (ms) before the next one."""
        header = peek_header(payload)
        if header.api_key == ApiKey.ApiVersions and not is_supported(header.api_key, header.api_version):
            return encode_api_versions_unsupported(header.correlation_id), False, 0
        auth.admit(header.api_key)
        request = Request(*decode_request(payload), auth.session)
        close = False
        fields: dict | None
        if header.api_key == ApiKey.SaslHandshake:
            fields, close = auth.handshake(request.body.mechanism)
        elif header.api_key == ApiKey.SaslAuthenticate:
            fields, close = await auth.authenticate(request.body.auth_bytes)
        else:
            fields = await self.handlers[request.header.api_key](request)
        if fields is None:
            return None, close, 0  # acks=0 produce: the client expects no response
        throttle_ms: int = fields.get("throttle_time_ms", 0)
        return encode_response(request.header, fields), close, throttle_ms
