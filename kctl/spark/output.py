"""Query results on stdout for `kctl sql`: text tables, JSON lines or CSV.

A streaming query on a terminal with the text format shows one table that is redrawn after
every micro-batch; otherwise each micro-batch's rows are printed as they come, so the
output can be piped (JSON lines to jq, CSV to a file).
"""

from __future__ import annotations

import csv
import datetime
import decimal
import json
import sys
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, Row
from rich.live import Live
from rich.table import Table

from kctl.shell import console


def plain(value: Any) -> Any:
    """A value as JSON can hold it; bytes as text (kctl's records are mostly text)."""
    if isinstance(value, Row):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode(errors="replace")
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _text(value: Any) -> str | None:
    value = plain(value)
    return value if value is None or isinstance(value, str) else json.dumps(value)


def print_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str,
    title: str | None = None,
    header: bool = True,
) -> None:
    if fmt == "json":
        for row in rows:
            sys.stdout.write(json.dumps(dict(zip(columns, map(plain, row))), ensure_ascii=False) + "\n")
    elif fmt == "csv":
        writer = csv.writer(sys.stdout)
        if header:
            writer.writerow(columns)
        writer.writerows([[_text(v) for v in row] for row in rows])
    else:
        console.print_table(columns, [[_text(v) for v in row] for row in rows], title)
    sys.stdout.flush()


class BatchPrinter:
    """The foreachBatch function of a streaming `kctl sql` printing to stdout."""

    def __init__(self, fmt: str):
        self._fmt = fmt
        self._live: Live | None = None
        self._batches = 0

    def __enter__(self) -> BatchPrinter:
        out = console.stdout()
        if self._fmt == "text" and out.is_terminal:
            self._live = Live(console=out, auto_refresh=False)
            self._live.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._live is not None:
            self._live.stop()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        rows = [tuple(r) for r in df.collect()]
        title = f"batch {batch_id}, {len(rows)} rows"
        if self._live is not None:
            self._live.update(_table(df.columns, rows, title), refresh=True)
        else:
            print_rows(df.columns, rows, self._fmt, title, header=self._batches == 0)
        self._batches += 1


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str) -> Table:
    table = Table(*(c.upper() for c in columns), title=title, title_justify="left", header_style="bold")
    for row in rows:
        table.add_row(*("-" if v is None else v for v in map(_text, row)))
    return table
