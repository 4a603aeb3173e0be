"""A minimal Kafka client for broker-to-broker requests, over the same codec as the server."""

from __future__ import annotations

import asyncio
import struct

from brokerd.protocol.codec import RequestHeader, decode_response, encode_request

_SIZE = struct.Struct(">i")


class BrokerClient:
    """One connection to one broker; requests are sent one at a time, in the order callers
    ask (a transaction coordinator may have several markers in flight to one leader)."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float):
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0
        self._lock = asyncio.Lock()

    async def request(self, api_key: int, api_version: int, fields: dict,
                      extra_timeout_s: float = 0.0):
        """Send a request and return the decoded response; any failure closes the connection."""
        async with self._lock:
            try:
                return await asyncio.wait_for(self._round_trip(api_key, api_version, fields),
                                              self.timeout_s + extra_timeout_s)
            except BaseException:
                self.close()
                raise

    async def _round_trip(self, api_key: int, api_version: int, fields: dict):
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        self._correlation_id += 1
        header = RequestHeader(api_key, api_version, self._correlation_id, self.client_id)
        self._writer.write(encode_request(header, fields))
        await self._writer.drain()
        (size,) = _SIZE.unpack(await self._reader.readexactly(4))
        return decode_response(header, await self._reader.readexactly(size))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
