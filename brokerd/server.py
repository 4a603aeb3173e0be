"""The asyncio TCP listener: Kafka framing, per-connection ordering, and fault isolation.

Requests on one connection are answered in order, one at a time, as Kafka does (clients
pipeline and match responses by order and correlation id). Whatever a client sends — garbage,
a truncated frame, an absurd size, an unknown API — costs that client its connection and
nothing else: the broker logs it and keeps serving everyone.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Awaitable, Callable

from kafka.protocol.api_key import ApiKey

from brokerd.protocol.api_versions import is_supported
from brokerd.protocol.codec import (
    MalformedRequest, Request, decode_request, encode_api_versions_unsupported,
    encode_response, peek_header,
)

log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[dict | None]]
_SIZE = struct.Struct(">i")


class KafkaServer:
    def __init__(self, handlers: dict[int, Handler], host: str, port: int, max_request_bytes: int):
        self.handlers = handlers
        self.host = host
        self.port = port
        self.max_request_bytes = max_request_bytes
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port,
                                                  reuse_address=True)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        try:
            while True:
                payload = await self._read_frame(reader)
                response = await self._respond(payload, peer[0] if peer else "")
                if response is not None:
                    writer.write(response)
                    await writer.drain()
        except asyncio.IncompleteReadError:
            pass  # the client hung up, possibly mid-frame
        except MalformedRequest as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("closing connection from %s after an internal error", peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _read_frame(self, reader: asyncio.StreamReader) -> bytes:
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        if not 0 < size <= self.max_request_bytes:
            raise MalformedRequest(f"frame size {size} outside 1..{self.max_request_bytes}")
        return await reader.readexactly(size)

    async def _respond(self, payload: bytes, client_host: str) -> bytes | None:
        header = peek_header(payload)
        if header.api_key == ApiKey.ApiVersions and not is_supported(header.api_key,
                                                                     header.api_version):
            return encode_api_versions_unsupported(header.correlation_id)
        request = decode_request(payload)
        request.client_host = client_host
        fields = await self.handlers[request.header.api_key](request)
        if fields is None:
            return None  # acks=0 produce: the client expects no response
        return encode_response(request.header, fields)
