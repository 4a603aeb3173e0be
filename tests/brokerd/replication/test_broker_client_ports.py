"""A broker's connections to other brokers come from its own address (127.0.1.ID) with a port
the kernel picks at connect, as for any outgoing connection: picked at bind, the port would
come from the pool (odd ports) that `kctl cluster up` takes listener ports from, and a broker
restarted on its planned port could find it held by another broker's fetcher."""

import asyncio
import socket

import pytest

from brokerd.replication.broker_client import _connected_from

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_connections_from_a_broker_address_take_their_port_at_connect(host):
    async def main() -> list[int]:
        server = await asyncio.start_server(lambda r, w: w.close(), host, 0)
        remote = server.sockets[0].getsockname()[:2]
        socks = [await _connected_from((host, 0), remote) for _ in range(40)]
        ports = [s.getsockname()[1] for s in socks]
        for s in socks:
            s.close()
        server.close()
        return ports

    ports = asyncio.run(main())
    assert all(port % 2 == 0 for port in ports), ports  # Linux gives connect() the even ones


def test_a_port_taken_at_bind_would_be_from_the_listener_pool():
    """What the fix avoids, so the test above can tell one from the other."""
    socks = [socket.socket() for _ in range(40)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        assert all(s.getsockname()[1] % 2 == 1 for s in socks)
    finally:
        for s in socks:
            s.close()
