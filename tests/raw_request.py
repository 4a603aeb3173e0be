"""One request over a plain socket to one broker, for tests that must see a broker's own
answer: no client retries, no leader routing."""

from __future__ import annotations

import socket
import struct

from brokerd.protocol.codec import RequestHeader, decode_response, encode_request


def raw_request(port: int, api_key: int, version: int, body: dict):
    """Send ``body`` as one request and return the decoded response."""
    header = RequestHeader(api_key, version, 7, "raw")
    with socket.create_connection(("127.0.0.1", port), 5) as sock:
        sock.sendall(encode_request(header, body))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(header, sock.recv(size, socket.MSG_WAITALL))


class RawConnection:
    """Several requests over one socket, for tests of per-connection state (SASL)."""

    def __init__(self, port: int, timeout: float = 5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self._correlation_id = 0

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body: dict) -> RequestHeader:
        self._correlation_id += 1
        header = RequestHeader(api_key, version, self._correlation_id, "raw")
        self.sock.sendall(encode_request(header, body))
        return header

    def request(self, api_key: int, version: int, body: dict):
        header = self.send(api_key, version, body)
        return self.response(header)

    def request_bytes(self, frame: bytes):
        """Send a frame exactly as given (a fuzzer's, a client's recording) and decode the answer
        by the api key, version and correlation id the frame itself carries."""
        self.sock.sendall(frame)
        return self.response(RequestHeader(*struct.unpack_from(">hhi", frame, 4)))

    def response(self, header: RequestHeader):
        """The next response on this connection, decoded as the answer to ``header``."""
        size = struct.unpack(">i", self.sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(header, self.sock.recv(size, socket.MSG_WAITALL))

    def closed_by_broker(self) -> bool:
        """True when the broker closed the connection (reads end of stream)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
