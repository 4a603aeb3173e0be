"""Options shared by several commands, declared once so their names and help never drift,
and the parsing of values several share (partition lists).

They are per command rather than global so they can go anywhere on the command line
(`kctl consume t -b host:9092`), as with kcat and rpk.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

Bootstrap = Annotated[
    str | None,
    typer.Option(
        "--bootstrap",
        "-b",
        metavar="HOST:PORT[,...]",
        show_default=False,
        help="Brokers to contact. Default: $KCTL_BOOTSTRAP, else the live brokers of the local cluster.",
    ),
]

ClusterDir = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        metavar="DIR",
        show_default=False,
        help="Local cluster directory. Default: $KCTL_HOME, else ~/.kctl.",
    ),
]

Timeout = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        envvar="KCTL_TIMEOUT",
        min=0.1,
        help="Give up (exit 3) when the cluster does not answer within this time.",
    ),
]

DeliveryTimeout = Annotated[
    float,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        envvar="KCTL_TIMEOUT",
        min=0.1,
        help="Give up (exit 3) when the cluster does not answer within this time, and fail records "
        "it has not acknowledged within this time (message.timeout.ms).",
    ),
]

Settings = Annotated[
    list[str] | None,
    typer.Option(
        "-X",
        metavar="KEY=VALUE",
        show_default=False,
        help="Any librdkafka setting, e.g. -X debug=broker (repeatable).",
    ),
]

CommandConfig = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        "-F",
        metavar="FILE",
        envvar="KCTL_COMMAND_CONFIG",
        exists=True,
        dir_okay=False,
        show_default=False,
        help="Client settings from a properties file: librdkafka KEY=VALUE lines, as kcat -F reads "
        "them, e.g. a user's security.protocol, sasl.mechanism, sasl.username, sasl.password. "
        "Default: a secured local cluster's DIR/admin.properties, for that cluster only. "
        "-X settings override it.",
    ),
]

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]

SchemaRegistryUrl = Annotated[
    str | None,
    typer.Option(
        "--schema-registry",
        "-r",
        metavar="URL",
        show_default=False,
        help="Schema registry to use (Confluent's REST API). Default: $KCTL_SCHEMA_REGISTRY_URL, "
        "else the local cluster's registry.",
    ),
]

DEFAULT_TIMEOUT = 5.0


class Acks(str, Enum):
    NONE = "0"
    LEADER = "1"
    ALL = "all"


class Compression(str, Enum):
    NONE = "none"
    GZIP = "gzip"
    SNAPPY = "snappy"
    LZ4 = "lz4"
    ZSTD = "zstd"


AcksOption = Annotated[
    Acks,
    typer.Option(
        "--acks", help="Acknowledgements to wait for: 0 none, 1 the leader, all the in-sync replicas."
    ),
]

CompressionOption = Annotated[
    Compression, typer.Option("--compression", "-z", help="Compression codec of produced batches.")
]

TransactionalId = Annotated[
    str | None,
    typer.Option(
        "--transactional-id",
        metavar="ID",
        show_default=False,
        help="Produce in transactions under this transactional.id: read_committed consumers see a "
        "transaction's records all at once, or never if it aborts. A newer producer with the "
        "same ID fences this one (exit 6).",
    ),
]


class Isolation(str, Enum):
    READ_COMMITTED = "read_committed"
    READ_UNCOMMITTED = "read_uncommitted"


def parse_partitions(values: list[str] | None) -> list[int] | None:
    """`-p 0 -p 2` and `-p 0,2` alike; None means every partition."""
    if not values:
        return None
    try:
        return sorted({int(p) for v in values for p in v.split(",") if p.strip()})
    except ValueError:
        raise KctlError(
            f"invalid partition list {','.join(values)!r}: expected numbers like 0,2", ExitCode.INVALID_INPUT
        ) from None
