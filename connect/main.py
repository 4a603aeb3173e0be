"""`python -m connect`: a Kafka Connect worker for one cluster.

It binds its port first, then waits for the cluster and reads its connectors' configs from the
config topic, then serves Connect's REST API while Spark starts and runs the connectors
(httpservice.daemon says how a service starts and its exit codes).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from httpservice import daemon

if TYPE_CHECKING:
    from connect.storage import ConnectStore, Loaded
    from httpservice.clusterlogin import ClusterLogin

log = logging.getLogger("connect")
CLUSTER_WAIT_S = 30.0
RETRY_S = 0.5


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = daemon.arguments("python -m connect", __doc__.splitlines()[0], default_port=8083)
    parser.add_argument(
        "--dir", required=True, type=Path, help="the worker's directory: checkpoints/NAME per connector"
    )
    parser.add_argument(
        "--master", default="local[*]", help="the Spark master URL (local[N], spark://HOST:PORT)"
    )
    parser.add_argument(
        "--worker-config",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Connect worker setting: group.id, config.storage.topic, status.storage.topic, "
        "key.converter, value.converter, ...",
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
    """Read the connectors' configs, start Spark and them, then answer until SIGTERM/SIGINT."""
    from connect.app import create_app
    from connect.herder import Herder
    from connect.sparkruntime import SparkRuntime, TaskState
    from connect.storage import ConnectStore, StoreUnavailable, TopicNotCompacted
    from connect.workerconfig import WorkerConfig

    worker = WorkerConfig.of(dict(pair.partition("=")[::2] for pair in args.worker_config))
    client = {"bootstrap.servers": args.bootstrap, **client_config}
    store = ConnectStore(client, worker)
    try:
        loaded = _started(store)
    except TopicNotCompacted as exc:
        log.error("%s", exc)
        return daemon.EXIT_BAD_ARGUMENTS
    except StoreUnavailable as exc:
        log.error("%s", exc)
        return daemon.EXIT_UNREACHABLE
    kafka = {f"kafka.{key}": value for key, value in client.items()}

    def task_changed(name: str, state: TaskState) -> None:
        herder.task_changed(name, state)

    runtime = SparkRuntime(args.master, kafka, args.dir, worker, task_changed)
    herder = Herder(store, runtime, listener.url.removeprefix("http://"))
    runtime.start()
    herder.resume(loaded)
    app = create_app(herder, loaded.cluster_id, args.max_body_bytes, login)
    log.info(
        "Connect worker of %s serving on %s (Spark master %s)", args.bootstrap, listener.url, args.master
    )

    def stopped() -> None:
        runtime.close()
        store.close()
        log.info("Connect worker stopped")

    return daemon.serve(app, listener, stopped)


def _started(store: ConnectStore) -> Loaded:
    """The store's configs once the cluster answers (it may be starting beside the worker)."""
    from connect.storage import StoreUnavailable, TopicNotCompacted

    deadline = time.monotonic() + CLUSTER_WAIT_S
    while True:
        try:
            return store.start()
        except TopicNotCompacted:
            raise
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(RETRY_S)


if __name__ == "__main__":
    sys.exit(main())
