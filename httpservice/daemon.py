"""How a service starts: it binds its port before anything slow, so that whoever started it
need only wait for the port (a client that connects early waits in the listen backlog until the
service answers); it holds a lock file with its pid and URL while it runs (how kctl tells a live
service from a dead one: the lock dies with the process, a pid can be reused); then it serves an
ASGI app on the bound socket until SIGTERM or SIGINT.

Exit codes every service shares: 0 stopped by a signal, 2 bad arguments, 3 the cluster cannot
be reached, 4 the address is in use, 5 the lock file is held by another process.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from httpservice.clusterlogin import ClusterLogin

EXIT_BAD_ARGUMENTS = 2
EXIT_UNREACHABLE = 3
EXIT_ADDRESS_IN_USE = 4
EXIT_LOCKED = 5


def arguments(prog: str, description: str, default_port: int) -> argparse.ArgumentParser:
    """The options every service takes; a service adds its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--bootstrap", required=True, help="the cluster's bootstrap servers, HOST:PORT[,...]")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument(
        "--port", type=int, default=default_port, help="the port to listen on (0: any free one)"
    )
    parser.add_argument(
        "--client-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka property for the service's clients (security.protocol, sasl.*, ssl.*)",
    )
    parser.add_argument(
        "--client-config-file",
        metavar="FILE",
        help="a properties file of librdkafka settings (key=value lines; secrets stay out of argv)",
    )
    parser.add_argument(
        "--authenticate-users",
        action="store_true",
        help="ask for HTTP basic credentials and accept those that log in to the cluster (SASL)",
    )
    parser.add_argument("--lock-file", help="a file to hold locked, with the pid and URL, while running")
    parser.add_argument("--max-body-bytes", type=int, default=8 << 20, help="the largest request body taken")
    return parser


def client_config(args: argparse.Namespace) -> dict[str, str]:
    """The settings of --client-config-file (`#` lines are comments), then --client-config's."""
    lines = open(args.client_config_file).read().splitlines() if args.client_config_file else []
    config = {}
    for pair in [
        line for line in lines if line.strip() and not line.lstrip().startswith("#")
    ] + args.client_config:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--client-config {pair!r} is not KEY=VALUE")
        config[key.strip()] = value.strip()
    return config


@dataclass
class Listener:
    sock: socket.socket
    url: str
    lock: IO[str] | None


def listen(args: argparse.Namespace, log: logging.Logger) -> Listener | int:
    """The bound socket and the lock file held, or the exit code saying why not."""
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", args.host, args.port, exc.strerror)
        return EXIT_ADDRESS_IN_USE
    host, port = sock.getsockname()[:2]
    url = f"http://{host}:{port}"
    lock = _hold(args.lock_file, url) if args.lock_file else None
    if args.lock_file and lock is None:
        log.error("another process holds %s", args.lock_file)
        return EXIT_LOCKED
    return Listener(sock, url, lock)


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def _hold(path: str, url: str) -> IO[str] | None:
    """The lock file, locked and holding our pid and URL; None when another process holds it."""
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.truncate(0)
    handle.write(json.dumps({"pid": os.getpid(), "url": url}) + "\n")
    handle.flush()
    return handle


Serve = Callable[[argparse.Namespace, Listener, dict[str, str], "ClusterLogin | None"], int]


def run(args: argparse.Namespace, log: logging.Logger, start: Serve) -> int:
    """A service's main: log, bind and lock, read the client settings, check that users can be
    authenticated if asked, then `start` it (which serves until stopped): its exit code."""
    # a starter that held Ctrl-C and SIGTERM back while it started us (kctl's lessons do, to
    # remember every process they start) passed its blocked mask on: those signals are ours
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    listener = listen(args, log)
    if isinstance(listener, int):
        return listener
    config = client_config(args)
    login = None
    if args.authenticate_users:
        from httpservice.clusterlogin import ClusterLogin, sasl_protocol

        if not sasl_protocol(config):
            log.error(
                "--authenticate-users needs a SASL cluster (security.protocol SASL_PLAINTEXT or SASL_SSL)"
            )
            return EXIT_BAD_ARGUMENTS
        login = ClusterLogin({"bootstrap.servers": args.bootstrap, **config})
    return start(args, listener, config, login)


def serve(app: Any, listener: Listener, on_stop: Callable[[], None]) -> int:
    """Answer on the bound socket until SIGTERM/SIGINT, then `on_stop`."""
    import uvicorn

    # uvicorn stops on SIGTERM and then raises the signal again for the handler it found: with
    # the default one the process would die there, before `on_stop` closes the clients (the
    # REST proxy's consumer instances would stay in their groups until their session timeout).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    try:
        server.run(sockets=[listener.sock])
    finally:
        on_stop()
    return 0
