"""Where output goes: data on stdout, messages on stderr.

Tables are Rich tables on a terminal and plain aligned columns when piped, so `awk` and
`grep` see stable text without box drawing or colour; `--json` output is compact when piped
and indented on a terminal. Rich honours NO_COLOR and FORCE_COLOR by itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

Cell = str | int | Text | None


def stdout() -> Console:
    # Built per call: tests and pipes swap sys.stdout, and a Console caches its terminal checks.
    return Console(soft_wrap=True)


def stderr() -> Console:
    return Console(stderr=True, soft_wrap=True, highlight=False)


def info(message: str | Text) -> None:
    """A progress or summary message for the human, never mixed into the data stream."""
    stderr().print(message)


def warn(message: str) -> None:
    stderr().print(Text("warning: ", style="yellow").append(message, style=None))


def error(message: str) -> None:
    stderr().print(Text("kctl: error: ", style="bold red").append(message, style=None))


def print_json(doc: Any) -> None:
    indent = 2 if sys.stdout.isatty() else None
    sys.stdout.write(json.dumps(doc, indent=indent, ensure_ascii=False) + "\n")
    sys.stdout.flush()


@dataclass(frozen=True)
class Section:
    """A titled table, built once and then printed, or laid out in a live dashboard."""

    title: str | None
    columns: Sequence[str]
    rows: Sequence[Sequence[Cell]]


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Cell]], title: str | None = None) -> None:
    print_section(Section(title, columns, rows))


def print_title(title: str) -> None:
    """A section's title alone, for a section with nothing to list: as the tables' titles look
    (no empty table under it)."""
    console = stdout()
    if console.is_terminal:
        console.print(Text(title, style="table.title"))
        return
    sys.stdout.write(f"{title}\n")
    sys.stdout.flush()


def print_section(section: Section) -> None:
    """A table on stdout: Rich on a terminal, aligned plain text (no styles) when piped."""
    console = stdout()
    if console.is_terminal:
        console.print(rich_table(section))
        return
    if section.title:
        sys.stdout.write(f"{section.title}\n")
    lines = [[c.upper() for c in section.columns]] + [[_plain(c) for c in row] for row in section.rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(section.columns))]
    for line in lines:
        sys.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() + "\n")
    sys.stdout.flush()


def rich_table(section: Section) -> Table:
    table = Table(
        *(c.upper() for c in section.columns), title=section.title, title_justify="left", header_style="bold"
    )
    for row in section.rows:
        table.add_row(*(_cell(c) for c in row))
    return table


def _cell(value: Cell) -> str | Text:
    return value if isinstance(value, Text) else Text(_plain(value))


def _plain(value: Cell) -> str:
    if value is None:
        return "-"
    return value.plain if isinstance(value, Text) else str(value)
