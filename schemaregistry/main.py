"""`python -m schemaregistry`: serve the registry of one cluster.

It reads the `_schemas` topic to its end before it listens, so a client that can connect gets
answers with every schema registered so far. Exit codes: 0 stopped by SIGTERM/SIGINT, 2 bad
arguments, 3 the cluster cannot be reached or its `_schemas` topic is unfit, 4 the address is
in use.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys

from schemaregistry.kafka_store import KafkaStore, StoreUnavailable

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
    parser.add_argument("--topic", default="_schemas", help="the topic the schemas are kept in (kafkastore.topic)")
    parser.add_argument(
        "--group-id",
        default="schema-registry",
        help="the registries that share a topic and elect their writer (schema.registry.group.id)",
    )
    parser.add_argument("--max-body-bytes", type=int, default=8 << 20, help="the largest request body taken")
    return parser.parse_args(argv)


def _client_config(pairs: list[str]) -> dict[str, str]:
    config = {}
    for pair in pairs:
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


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    store = KafkaStore(args.bootstrap, _client_config(args.client_config), args.topic, args.group_id)
    try:
        store.start()
    except StoreUnavailable as exc:
        log.error("%s", exc)
        return 3
    try:
        sock = _listen(args.host, args.port)
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", args.host, args.port, exc.strerror)
        store.close()
        return 4
    import uvicorn

    from schemaregistry.api import create_app
    from schemaregistry.registry import SchemaRegistry

    app = create_app(SchemaRegistry(store), args.max_body_bytes)
    host, port = sock.getsockname()[:2]
    log.info("schema registry of %s serving on http://%s:%d", args.bootstrap, host, port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    try:
        server.run(sockets=[sock])
    finally:
        store.close()
        log.info("schema registry stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
