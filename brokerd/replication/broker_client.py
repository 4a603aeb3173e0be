"""A minimal Kafka client for broker-to-broker requests, over the same codec as the server,
with TLS and a SASL login where the inter-broker listener asks for them."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import struct
import time

from kafka.protocol.api_key import ApiKey

from brokerd.protocol.codec import RequestHeader, decode_response, encode_request
from brokerd.security.inter_broker import (
    InterBrokerAuthenticationError,
    InterBrokerSecurity,
    reauthentication_time,
)

_SIZE = struct.Struct(">i")
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)  # Linux's value


def source_address(listener_host: str) -> tuple[str, int] | None:
    """Where this broker's connections to other brokers come from: its own listener address
    when that is a loopback one (each broker of a local cluster has its own, 127.0.1.ID), so a
    packet filter tells brokers apart in both directions (kctl broker isolate); otherwise the
    kernel's choice."""
    try:
        loopback = ipaddress.ip_address(listener_host).is_loopback
    except ValueError:  # a host name
        return None
    return (listener_host, 0) if loopback else None


async def _connected_from(local_addr: tuple[str, int], remote: tuple[str, int]) -> socket.socket:
    """A TCP socket connected to `remote` from `local_addr`'s address. The port is chosen at
    connect, as for any outgoing connection (IP_BIND_ADDRESS_NO_PORT), not at bind: a port
    chosen at bind comes from the range `kctl cluster up` picks listener ports from, and
    would keep a broker restarted on its planned port from binding it."""
    ipv6 = ipaddress.ip_address(local_addr[0]).version == 6
    sock = socket.socket(socket.AF_INET6 if ipv6 else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind(local_addr)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, remote)
    except BaseException:
        sock.close()
        raise
    return sock


class BrokerClient:
    """One connection to one broker; requests are sent one at a time, in the order callers
    ask (a transaction coordinator may have several markers in flight to one leader)."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str,
        timeout_s: float,
        security: InterBrokerSecurity | None = None,
        local_addr: tuple[str, int] | None = None,
    ):
        self.host = host
        self.local_addr = local_addr
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.security = security
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0
        self._lock = asyncio.Lock()
        self._reauthenticate_at: float | None = None  # KIP-368, when the session is limited

    async def request(self, api_key: int, api_version: int, fields: dict, extra_timeout_s: float = 0.0):
        """Send a request and return the decoded response; any failure closes the connection."""
        async with self._lock:
            try:
                return await asyncio.wait_for(
                    self._round_trip(api_key, api_version, fields), self.timeout_s + extra_timeout_s
                )
            except BaseException:
                self.close()
                raise

    async def _round_trip(self, api_key: int, api_version: int, fields: dict):
        if self._writer is None:
            await self._connect()
        elif (
            self.security is not None  # a session is limited only where there was a login
            and self._reauthenticate_at is not None
            and time.monotonic() >= self._reauthenticate_at
        ):
            await self._login(self.security)  # on the same connection, before the session ends
        return await self._send(api_key, api_version, fields)

    async def _connect(self) -> None:
        tls = self.security.ssl_context() if self.security is not None else None
        hostname = self.host if tls else None
        if self.local_addr is None:
            self._reader, self._writer = await asyncio.open_connection(
                self.host, self.port, ssl=tls, server_hostname=hostname
            )
        else:
            sock = await _connected_from(self.local_addr, (self.host, self.port))
            self._reader, self._writer = await asyncio.open_connection(
                sock=sock, ssl=tls, server_hostname=hostname
            )
        if self.security is not None and self.security.uses_sasl:
            await self._login(self.security)

    async def _login(self, security: InterBrokerSecurity) -> None:
        """SaslHandshake v1, then SaslAuthenticate rounds until the mechanism is done; the
        last answer's session lifetime says when to log in again."""
        login = security.sasl_login()
        handshake = await self._send(ApiKey.SaslHandshake, 1, {"mechanism": login.mechanism})
        if handshake.error_code:
            raise InterBrokerAuthenticationError(
                f"{self.host}:{self.port} refused mechanism {login.mechanism} "
                f"(error {handshake.error_code}; enabled: {handshake.mechanisms})"
            )
        message = login.next_message(None)
        while message is not None:
            reply = await self._send(ApiKey.SaslAuthenticate, 1, {"auth_bytes": message})
            if reply.error_code:
                raise InterBrokerAuthenticationError(
                    f"{self.host}:{self.port} refused this broker: {reply.error_message}"
                )
            message = login.next_message(reply.auth_bytes)
        self._reauthenticate_at = reauthentication_time(reply.session_lifetime_ms, time.monotonic())

    async def _send(self, api_key: int, api_version: int, fields: dict):
        self._correlation_id += 1
        header = RequestHeader(api_key, api_version, self._correlation_id, self.client_id)
        reader, writer = self._streams()
        writer.write(encode_request(header, fields))
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        return decode_response(header, await reader.readexactly(size))

    def _streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The open connection's streams; a request goes out only once it is connected."""
        if self._reader is None or self._writer is None:
            raise ConnectionError(f"no connection to broker {self.host}:{self.port}")
        return self._reader, self._writer

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
        self._reauthenticate_at = None
