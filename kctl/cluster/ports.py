"""Ports for a local cluster's brokers and services, which keep them across restarts.

A port the kernel picks (a bind to port 0) comes from its ephemeral range
(net.ipv4.ip_local_port_range), the range every outgoing connection on the machine takes its
source port from: while a broker is down, any connection may take its port, and the
broker's restart then fails. Ports are picked below that range, where only a server's
explicit bind takes one, and are checked free on every address when picked.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

LOWEST = 10_000  # below it are the well-known and registered ports services are set up on
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_EPHEMERAL_LOW = 32_768


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when unreadable)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return LINUX_EPHEMERAL_LOW


def free_ports(count: int) -> list[int]:
    """`count` different ports no process holds on any address, below the ephemeral range
    (the kernel's own choice when that range leaves too few); the sockets stay open until
    all are chosen, so none repeats."""
    socks: list[socket.socket] = []
    try:
        for port in _candidates(count):
            sock = socket.socket()
            try:
                sock.bind(("", port))
            except OSError:
                sock.close()
                continue
            socks.append(sock)
            if len(socks) == count:
                break
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def _candidates(count: int) -> list[int]:
    below = range(LOWEST, ephemeral_low())
    if len(below) < 100 * count:
        return [0] * count  # the kernel's choice
    return random.sample(below, min(len(below), 1000 * count))


def ensure_port_free(port: int, broker_id: int | None = None) -> None:
    """Refuse a port some process holds on any address: the broker binds its own address,
    but a port taken elsewhere would confuse whoever reads the cluster's addresses."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError:
            who = f" (planned for broker {broker_id})" if broker_id is not None else ""
            raise KctlError(
                f"port {port}{who} is already in use by another process", ExitCode.ERROR
            ) from None
