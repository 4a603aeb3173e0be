"""`python -m restproxy`: serve Confluent's REST Proxy API for one cluster.

It binds its port first, then waits for the cluster to answer, then serves (httpservice.daemon
says how a service starts and its exit codes).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

from httpservice import daemon

if TYPE_CHECKING:
    from httpservice.clusterlogin import ClusterLogin

log = logging.getLogger("restproxy")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = daemon.arguments("python -m restproxy", __doc__.splitlines()[0], default_port=8082)
    parser.add_argument(
        "--schema-registry", metavar="URL", help="the registry of the avro, jsonschema and protobuf formats"
    )
    parser.add_argument(
        "--cluster-wait-ms",
        type=int,
        default=30_000,
        help="how long to wait for the cluster to answer before giving up (exit 3)",
    )
    parser.add_argument(
        "--consumer-instance-timeout-ms",
        type=int,
        default=300_000,
        help="destroy a v2 consumer instance not used for this long (consumer.instance.timeout.ms)",
    )
    parser.add_argument(
        "--consumer-request-timeout-ms",
        type=int,
        default=1_000,
        help="the longest a fetch of records waits (consumer.request.timeout.ms)",
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
    """Wait for the cluster, then answer until SIGTERM/SIGINT."""
    from restproxy.app import create_app
    from restproxy.clients import Clients, ClusterUnreachable
    from restproxy.context import ProxyContext, Settings

    clients = Clients(args.bootstrap, client_config)
    try:
        clients.wait_for_cluster(args.cluster_wait_ms / 1000)
    except ClusterUnreachable as exc:
        log.error("%s", exc)
        return daemon.EXIT_UNREACHABLE
    settings = Settings(
        args.consumer_instance_timeout_ms, args.consumer_request_timeout_ms, advertised_url=listener.url
    )
    user = client_config.get("sasl.username")
    own = None if user is None else (user, client_config.get("sasl.password", ""))
    context = ProxyContext(clients, args.schema_registry, settings, own_login=own)
    app = create_app(context, args.max_body_bytes, login)
    log.info("REST proxy of %s serving on %s", args.bootstrap, listener.url)

    def stopped() -> None:
        context.close()
        log.info("REST proxy stopped")

    return daemon.serve(app, listener, stopped)


if __name__ == "__main__":
    sys.exit(main())
