"""`brokerd`: run one broker of a local kctl cluster in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import signal
import sys
from pathlib import Path

from brokerd.broker import Broker
from brokerd.config import BrokerConfig

EXIT_CONFIG = 2
EXIT_START_FAILED = 3


def parse_args(argv: list[str] | None) -> BrokerConfig:
    parser = argparse.ArgumentParser(prog="brokerd", description=__doc__)
    parser.add_argument(
        "--cluster-dir", type=Path, required=True, help="cluster directory holding state/ and brokers/"
    )
    parser.add_argument("--broker-id", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "-o",
        "--override",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="broker setting with Kafka's name, e.g. num.partitions=3",
    )
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.override:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"override {item!r} is not NAME=VALUE")
        overrides[name] = value
    try:
        return BrokerConfig(args.broker_id, args.cluster_dir, args.port, args.host, overrides)
    except ValueError as exc:
        parser.error(str(exc))


async def run(config: BrokerConfig) -> None:
    """Serve until SIGTERM or SIGINT, then stop cleanly. The handlers are in place before
    the broker starts: a broker asked to stop while it starts (it registers, and so can be
    given leaderships, before it is done) finishes starting and then hands them over, instead
    of dying at once of the signal's default action."""
    broker = Broker(config)
    stopping = asyncio.Event()
    received: list[signal.Signals] = []

    def stop_on(sig: signal.Signals) -> None:
        received.append(sig)
        stopping.set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_on, sig)
    await broker.start()
    await stopping.wait()
    logging.getLogger("brokerd").info("broker %d stopping: %s received", config.broker_id, received[0].name)
    await broker.stop()


def raise_open_file_limit() -> None:
    """Use all the open files the hard limit allows: every replica in use maps three files
    (Kafka's guidance is likewise to raise the limit for brokers with many partitions)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass  # an unlimited hard limit the kernel will not grant: keep the soft one


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    raise_open_file_limit()
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format=f"%(asctime)s broker-{config.broker_id} %(levelname)s %(name)s: %(message)s",
    )
    try:
        asyncio.run(run(config))
    except ValueError as exc:  # a security setting that cannot work (listeners, TLS files)
        logging.getLogger("brokerd").error("invalid configuration: %s", exc)
        return EXIT_CONFIG
    except (OSError, RuntimeError) as exc:
        logging.getLogger("brokerd").error("cannot start: %s", exc)
        return EXIT_START_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
