"""`python -m restproxy`: serve Confluent's REST Proxy API for one cluster.

It binds its port first, then waits for the cluster to answer, then serves (httpservice.daemon
says how a service starts and its exit codes).
"""

from __future__ import annotations

import argparse
import logging
import sys

from httpservice import daemon

log = logging.getLogger("restproxy")
CLUSTER_WAIT_S = 30.0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = daemon.arguments("python -m restproxy", __doc__.splitlines()[0], default_port=8082)
    parser.add_argument(
        "--schema-registry", metavar="URL", help="the registry of the avro, jsonschema and protobuf formats"
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
    args = _arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    listener = daemon.listen(args, log)
    if isinstance(listener, int):
        return listener
    return _serve(args, listener)


def _serve(args: argparse.Namespace, listener: daemon.Listener) -> int:
    from httpservice.clusterlogin import ClusterLogin, sasl_protocol
    from restproxy.app import create_app
    from restproxy.clients import Clients, ClusterUnreachable
    from restproxy.context import ProxyContext, Settings

    client_config = daemon.client_config(args)
    if args.authenticate_users and not sasl_protocol(client_config):
        log.error("--authenticate-users needs a SASL cluster (security.protocol SASL_PLAINTEXT or SASL_SSL)")
        return daemon.EXIT_BAD_ARGUMENTS
    clients = Clients(args.bootstrap, client_config)
    try:
        clients.wait_for_cluster(CLUSTER_WAIT_S)
    except ClusterUnreachable as exc:
        log.error("%s", exc)
        return daemon.EXIT_UNREACHABLE
    settings = Settings(
        args.consumer_instance_timeout_ms, args.consumer_request_timeout_ms, advertised_url=listener.url
    )
    own = (
        (client_config["sasl.username"], client_config.get("sasl.password", ""))
        if "sasl.username" in client_config
        else None
    )
    context = ProxyContext(clients, args.schema_registry, settings, own_login=own)
    login = (
        ClusterLogin({"bootstrap.servers": args.bootstrap, **client_config})
        if args.authenticate_users
        else None
    )
    app = create_app(context, args.max_body_bytes, login)
    log.info("REST proxy of %s serving on %s", args.bootstrap, listener.url)

    def stopped() -> None:
        context.close()
        log.info("REST proxy stopped")

    return daemon.serve(app, listener, stopped)


if __name__ == "__main__":
    sys.exit(main())
