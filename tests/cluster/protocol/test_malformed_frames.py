"""A broker never dies because of what a client sent."""

from __future__ import annotations

import os
import socket
import struct

import pytest
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.cluster


def raw_exchange(port: int, data: bytes, read: bool = True) -> bytes:
    """Send raw bytes; return whatever comes back before the broker closes (or 2 s pass)."""
    with socket.create_connection(("127.0.0.1", port), 5) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(5)
        chunks = []
        while read:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def frame(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    payload = struct.pack(">hhih", api_key, version, correlation_id, -1) + body
    return struct.pack(">i", len(payload)) + payload


GARBAGE = {
    "random bytes": os.urandom(4096),
    "negative size": struct.pack(">i", -5) + b"xxxx",
    "oversized frame": struct.pack(">i", 2**31 - 1) + b"x" * 100,
    "truncated frame": struct.pack(">i", 1000) + b"\x00\x03\x00\x01",
    "unknown api key": frame(999, 0, 1, b""),
    "unadvertised version": frame(0, 99, 1, b""),
    "undecodable body": frame(3, 1, 1, b"\x00\x00\x00\x05\x00"),
    "produce body cut short": frame(0, 8, 1, b"\xff\xff\x00\x01\x00\x00\x03\xe8\x00\x00\x00\x01"),
}


@pytest.mark.parametrize("name", list(GARBAGE))
def test_garbage_closes_only_that_connection(cluster, name):
    port = cluster.ports[1]
    with socket.create_connection(("127.0.0.1", port), 5) as bystander:
        assert raw_exchange(port, GARBAGE[name]) == b""
        bystander.sendall(frame(18, 0, 42, b""))
        size = struct.unpack(">i", bystander.recv(4))[0]
        assert size > 8, "an open connection kept being served"
    assert cluster.procs[1].poll() is None
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10)
    assert 1 in metadata.brokers


def test_unsupported_api_versions_gets_a_v0_error_listing_the_supported_range(cluster):
    reply = raw_exchange(cluster.ports[1], frame(18, 77, 9, b""))
    size, correlation_id, error, count, key, low, high = struct.unpack(">iihihhh", reply[:20])
    assert (correlation_id, error, count, key) == (9, 35, 1, 18)
    assert (low, high) == (0, 3)
    assert size == len(reply) - 4
