"""`python -m schemaregistry`: serve the registry of one cluster.

It binds its port first, then reads the `_schemas` topic to its end, then answers, so a client
that can connect gets answers with every schema registered so far (httpservice.daemon says how a
service starts and its exit codes; 3 here also means the `_schemas` topic is unfit).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

from httpservice import daemon

if TYPE_CHECKING:
    from httpservice.clusterlogin import ClusterLogin

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
    return daemon.run(_arguments(argv), log, _serve)


def _serve(
    args: argparse.Namespace,
    listener: daemon.Listener,
    client_config: dict[str, str],
    login: ClusterLogin | None,
) -> int:
    """Read the store, then answer until SIGTERM/SIGINT."""
    from schemaregistry.api import create_app
    from schemaregistry.kafka_store import KafkaStore, StoreUnavailable
    from schemaregistry.registry import SchemaRegistry

    store = KafkaStore(args.bootstrap, client_config, args.topic, args.group_id)
    try:
        store.start()
    except StoreUnavailable as exc:
        log.error("%s", exc)
        return daemon.EXIT_UNREACHABLE
    app = create_app(SchemaRegistry(store), args.max_body_bytes, login)
    log.info("schema registry of %s serving on %s", args.bootstrap, listener.url)

    def stopped() -> None:
        store.close()
        log.info("schema registry stopped")

    return daemon.serve(app, listener, stopped)


if __name__ == "__main__":
    sys.exit(main())
