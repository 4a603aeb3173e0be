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
