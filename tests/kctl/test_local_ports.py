"""The ports kctl plans for a local cluster's brokers and services: free, distinct, and
outside the kernel's ephemeral range, so no outgoing connection can take one while its
broker is down and fail the broker's restart."""

import socket

import pytest

from kctl.cluster import ports
from kctl.shell.errors import KctlError

pytestmark = pytest.mark.unit


def test_planned_ports_are_free_distinct_and_below_the_ephemeral_range():
    planned = ports.free_ports(20)
    assert len(set(planned)) == 20
    assert all(ports.LOWEST <= port < ports.ephemeral_low() for port in planned)
    for port in planned:
        ports.ensure_port_free(port)


def test_a_port_an_outgoing_connection_holds_is_refused_in_one_line():
    with (
        socket.create_server(("127.0.0.1", 0)) as server,
        socket.create_connection(server.getsockname()) as client,
    ):
        taken = client.getsockname()[1]  # the kernel's pick, from the ephemeral range
        assert taken >= ports.ephemeral_low()
        with pytest.raises(
            KctlError, match=f"^port {taken} \\(planned for broker 2\\) is already in use by another process$"
        ):
            ports.ensure_port_free(taken, 2)


def test_a_range_too_small_to_pick_from_falls_back_to_the_kernels_choice(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_low", lambda: ports.LOWEST + 10)
    planned = ports.free_ports(2)
    assert len(set(planned)) == 2 and all(port > 0 for port in planned)
