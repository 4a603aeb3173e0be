"""`kctl sql "SELECT ..."`: Spark SQL over the cluster's topics, on a local Spark.

Every topic the query names is a view (key and value as text, or the value's JSON fields as
columns with --value-format json). Without --trigger the query runs once over what the
topics hold now; with one it is a streaming query that follows new records. PySpark is
imported only when the command runs: it is optional (the `spark` extra) and slow to load.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kctl.kafka import topics
from kctl.kafka.client import connect, fetch_metadata
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:  # PySpark is imported only when the command runs
    from kctl.spark.sqlrun import Trigger

_INTERVAL = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)")
_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours"}


class OutputFormat(str, Enum):
    TEXT = "text"
    JSON = "json"
    CSV = "csv"


class ValueFormat(str, Enum):
    TEXT = "text"
    JSON = "json"


class Start(str, Enum):
    EARLIEST = "earliest"
    LATEST = "latest"


def parse_trigger(text: str | None) -> Trigger | None:
    """--trigger as DataStreamWriter.trigger arguments; None for a batch query."""
    if text is None:
        return None
    if text == "once":
        return {"once": True}
    if text == "available-now":
        return {"availableNow": True}
    if text == "continuous":
        return {"processingTime": "1 second"}
    match = _INTERVAL.fullmatch(text.strip())
    if not match:
        raise KctlError(
            f"invalid --trigger {text!r}: use once, available-now, continuous, "
            "or an interval such as 500ms, 5s, 1m",
            ExitCode.USAGE,
        )
    return {"processingTime": f"{match.group(1)} {_UNITS[match.group(2)]}"}


@connection_options()
def sql(
    query: Annotated[
        str,
        typer.Argument(
            metavar="SQL", show_default=False, help="The query; topics are views: SELECT * FROM orders."
        ),
    ],
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="TOPIC",
            show_default=False,
            help="Write the result to this topic (created if missing) instead of printing it: its "
            "value (key, headers, partition) columns, else each row as a JSON value.",
        ),
    ] = None,
    trigger: Annotated[
        str | None,
        typer.Option(
            "--trigger",
            metavar="WHEN",
            show_default=False,
            help="Run as a streaming query: once (one micro-batch), available-now (what is there, "
            "then stop), continuous (every second until Ctrl-C) or an interval (5s, 500ms, 1m).",
        ),
    ] = None,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint",
            metavar="DIR",
            show_default=False,
            help="Streaming checkpoint, so a restarted query resumes where it stopped. "
            "Default: a temporary directory.",
        ),
    ] = None,
    fmt: Annotated[
        OutputFormat, typer.Option("--format", help="Result rows as a text table, JSON lines or CSV.")
    ] = OutputFormat.TEXT,
    value_format: Annotated[
        ValueFormat,
        typer.Option(
            "--value-format", help="Decode values as text, or as JSON objects whose fields become columns."
        ),
    ] = ValueFormat.TEXT,
    schema: Annotated[
        str | None,
        typer.Option(
            "--schema",
            metavar="DDL",
            show_default=False,
            help="Schema of JSON values, e.g. 'user STRING, amount DOUBLE'. Default: inferred "
            "from the first records of each partition.",
        ),
    ] = None,
    start: Annotated[
        Start,
        typer.Option("--from", help="Where streaming queries start reading; batch queries read everything."),
    ] = Start.EARLIEST,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Run Spark SQL over topics: print the result, or write it to a topic with --to.

    A streaming query (--trigger) shows a table redrawn after every micro-batch on a terminal
    (aggregations in full, other queries as new rows), and prints each micro-batch's rows
    when piped. Ctrl-C stops it (exit 130).
    """
    triggers = parse_trigger(trigger)
    if triggers is None and (checkpoint is not None or start is Start.LATEST):
        raise KctlError("--checkpoint and --from latest need a streaming query (--trigger)", ExitCode.USAGE)
    conn = connect(options)
    names = list(fetch_metadata(conn.admin(), conn).topics)
    if to is not None and topics.ensure(conn, topics.validate_name(to), -1, -1):
        console.info(f"Created topic {to}.")
    sqlrun, views = _spark_modules()
    client = {"bootstrap.servers": conn.bootstrap.servers, **conn.client_settings()}
    spec = views.ViewSpec(client, triggers is not None, start.value, value_format.value, schema)
    job = sqlrun.SqlJob(
        query,
        spec,
        views.named_topics(query, names),
        triggers,
        to,
        None if checkpoint is None else str(checkpoint.expanduser()),
        fmt.value,
    )
    try:
        sqlrun.run(job)
    except sqlrun.SqlError as exc:
        raise KctlError(str(exc), ExitCode.INVALID_INPUT if exc.invalid else ExitCode.ERROR) from None
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None


def _spark_modules():
    try:
        from kctl.spark import sqlrun, views
    except ImportError as exc:
        raise KctlError(
            f"kctl sql needs PySpark ({exc.name} is missing): pip install 'kctl[spark]'", ExitCode.ERROR
        ) from None
    return sqlrun, views
