"""What the examples share: their command line and where their checkpoints go."""

import argparse
import os
import tempfile

from kctl.spark.session import cluster_bootstrap


def parse_args(doc: str, checkpoint: str | None = None) -> argparse.Namespace:
    """-b (else $KCTL_BOOTSTRAP, else the local cluster), --once, and --checkpoint for
    queries that write to topics; adds `bootstrap` (resolved) and `trigger`
    (DataStreamWriter.trigger arguments)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-b", "--bootstrap", help="HOST:PORT of the brokers")
    if checkpoint is not None:
        parser.add_argument(
            "--checkpoint",
            help="where the query keeps its progress (default: %(default)s)",
            default=os.path.join(tempfile.gettempdir(), "kctl-examples", checkpoint),
        )
    parser.add_argument(
        "--once",
        action="store_true",
        help="process what the topics hold now, then exit (Trigger.AvailableNow)",
    )
    args = parser.parse_args()
    args.bootstrap = cluster_bootstrap(args.bootstrap)
    args.trigger = {"availableNow": True} if args.once else {"processingTime": "2 seconds"}
    return args
