"""`python -m schemaregistry`: serve the registry of one cluster.

It binds its port first, then reads the `_schemas` topic to its end, then answers, so a client
that can connect gets answers with every schema registered so far (httpservice.daemon says how a
service starts and its exit codes; 3 here also means the `_schemas` topic is unfit).
"""

from __future__ import annotations

import argparse
import logging
import sys

from httpservice import daemon

log = logging.getLogger("schemaregistry")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = daemon.arguments("python -m schemaregistry", __doc__.splitlines()[0], default_port=8081)
    parser.add_argument(
        "--topic", default="_schemas", help="the topic the schemas are kept in (kafkastore.topic)"
    )
    parser.add_argument(
        "--group-id",
        default="schema-registry",
        help="the registries that share a topic and elect their writer (schema.registry.group.id)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    listener = daemon.listen(args, log)
    if isinstance(listener, int):
        return listener
    return _serve(args, listener)


def _serve(args: argparse.Namespace, listener: daemon.Listener) -> int:
    """Read the store, then answer until SIGTERM/SIGINT."""
    from httpservice.clusterlogin import ClusterLogin, sasl_protocol
    from schemaregistry.api import create_app
    from schemaregistry.kafka_store import KafkaStore, StoreUnavailable
    from schemaregistry.registry import SchemaRegistry

    client_config = daemon.client_config(args)
    if args.authenticate_users and not sasl_protocol(client_config):
        log.error("--authenticate-users needs a SASL cluster (security.protocol SASL_PLAINTEXT or SASL_SSL)")
        return daemon.EXIT_BAD_ARGUMENTS
    store = KafkaStore(args.bootstrap, client_config, args.topic, args.group_id)
    try:
        store.start()
    except StoreUnavailable as exc:
        log.error("%s", exc)
        return daemon.EXIT_UNREACHABLE
    login = (
        ClusterLogin({"bootstrap.servers": args.bootstrap, **client_config})
        if args.authenticate_users
        else None
    )
    app = create_app(SchemaRegistry(store), args.max_body_bytes, login)
    log.info("schema registry of %s serving on %s", args.bootstrap, listener.url)

    def stopped() -> None:
        store.close()
        log.info("schema registry stopped")

    return daemon.serve(app, listener, stopped)


if __name__ == "__main__":
    sys.exit(main())
