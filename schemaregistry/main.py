"""`python -m schemaregistry`: serve the registry of one cluster.

It binds its port first, then reads the `_schemas` topic to its end, then answers: a client
that connects while it starts waits in the listen backlog and gets answers with every schema
registered so far, so whoever started it need only wait for the port. With --lock-file it holds
an exclusive lock on that file while it runs and writes its pid and URL there (how kctl tells a
live registry from a dead one). Exit codes: 0 stopped by SIGTERM/SIGINT, 2 bad arguments, 3 the
cluster cannot be reached or its `_schemas` topic is unfit, 4 the address is in use, 5 the lock
file is held by another registry.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import socket
import sys
from typing import IO

log = logging.getLogger("schemaregistry")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m schemaregistry", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="the cluster's bootstrap servers, HOST:PORT[,...]")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--port", type=int, default=8081, help="the port to listen on (0: any free one)")
    parser.add_argument(
        "--client-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka property for the registry's clients (security.protocol, sasl.*, ssl.*)",
    )
    parser.add_argument(
        "--client-config-file",
        metavar="FILE",
        help="a properties file of librdkafka settings (key=value lines; secrets stay out of argv)",
    )
    parser.add_argument(
        "--topic", default="_schemas", help="the topic the schemas are kept in (kafkastore.topic)"
    )
    parser.add_argument(
        "--group-id",
        default="schema-registry",
        help="the registries that share a topic and elect their writer (schema.registry.group.id)",
    )
    parser.add_argument(
        "--authenticate-users",
        action="store_true",
        help="ask for HTTP basic credentials and accept those that log in to the cluster (SASL)",
    )
    parser.add_argument("--lock-file", help="a file to hold locked, with the pid and URL, while running")
    parser.add_argument("--max-body-bytes", type=int, default=8 << 20, help="the largest request body taken")
    return parser.parse_args(argv)


def _client_config(file: str | None, pairs: list[str]) -> dict[str, str]:
    """The settings of --client-config-file (`#` lines are comments), then --client-config's."""
    lines = open(file).read().splitlines() if file else []
    config = {}
    for pair in [line for line in lines if line.strip() and not line.lstrip().startswith("#")] + pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"python -m schemaregistry: --client-config {pair!r} is not KEY=VALUE")
        config[key.strip()] = value.strip()
    return config


def _listen(host: str, port: int) -> socket.socket:
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


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        sock = _listen(args.host, args.port)
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", args.host, args.port, exc.strerror)
        return 4
    host, port = sock.getsockname()[:2]
    url = f"http://{host}:{port}"
    lock = _hold(args.lock_file, url) if args.lock_file else None
    if args.lock_file and lock is None:
        log.error("another schema registry holds %s", args.lock_file)
        return 5
    return _serve(args, sock, url)


def _serve(args: argparse.Namespace, sock: socket.socket, url: str) -> int:
    """Read the store, then answer on the bound socket until SIGTERM/SIGINT."""
    import uvicorn

    from schemaregistry.api import create_app
    from schemaregistry.authentication import ClusterLogin
    from schemaregistry.kafka_store import KafkaStore, StoreUnavailable
    from schemaregistry.registry import SchemaRegistry

    client_config = _client_config(args.client_config_file, args.client_config)
    store = KafkaStore(args.bootstrap, client_config, args.topic, args.group_id)
    try:
        store.start()
    except StoreUnavailable as exc:
        log.error("%s", exc)
        return 3
    login = (
        ClusterLogin({"bootstrap.servers": args.bootstrap, **client_config})
        if args.authenticate_users
        else None
    )
    if args.authenticate_users and not client_config.get("security.protocol", "").startswith("SASL"):
        log.error("--authenticate-users needs a SASL cluster (security.protocol SASL_PLAINTEXT or SASL_SSL)")
        store.close()
        return 2
    app = create_app(SchemaRegistry(store), args.max_body_bytes, login)
    log.info("schema registry of %s serving on %s", args.bootstrap, url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        store.close()
        log.info("schema registry stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
