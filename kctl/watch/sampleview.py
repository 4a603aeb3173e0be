"""The SAMPLE section of `kctl watch TOPIC --sample`, built from the sample document (what
--json prints and --record keeps, see kctl.watch.sample), so the live screen, the printed
snapshot and a recording agree.

Keys and values written with a registry schema show as compact JSON after their schema id,
`(schema 3) {"id":1}`; other bytes as text, with bytes that are not UTF-8 (and control
characters) escaped, so a row stays one line. Both are cut to fit the terminal's width.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from kctl.shell import console
from kctl.shell.console import Cell, Section

# What the PARTITION and OFFSET columns and the table's borders take of a line.
OTHER_COLUMNS = 30
MIN_KEY, MIN_VALUE = 12, 24


def sections(doc: dict, width: int | None = None) -> list[Section]:
    """The sample's table, then why part of it is missing and the decoder's warnings."""
    limits = _limits(console.stdout().width if width is None else width)
    rows = [_row(r, limits) for r in doc["partitions"]]
    out = [Section(_title(doc), ["partition", "offset", "key", "value"], rows)]
    notes = [[doc[field]] for field in ("note", "error") if doc.get(field)]
    notes += [[w] for w in doc.get("warnings", [])]
    if notes:
        out.append(Section(f"SAMPLE {doc['topic']}: notes", ["note"], notes))
    return out


def _title(doc: dict) -> str:
    title = f"SAMPLE {doc['topic']}: the latest record of each partition"
    left_out = doc.get("partitions_left_out") or 0
    if left_out:
        title += f" (the first {len(doc['partitions'])}; {left_out} more partition(s) not sampled)"
    return title


def _limits(width: int) -> tuple[int, int]:
    """(key, value) widths: a key gets a quarter of what is left, the value the rest."""
    room = max(0, width - OTHER_COLUMNS)
    key = max(MIN_KEY, room // 4)
    return key, max(MIN_VALUE, room - key)


def _row(row: dict, limits: tuple[int, int]) -> list[Cell]:
    """A record's row, or a partition's without one and why (empty, only markers, an error)."""
    if row.get("offset") is None:
        return [row["partition"], None, None, _cut(row.get("error") or row.get("note") or "", limits[1])]
    return [row["partition"], row["offset"], _shown(row, "key", limits[0]), _shown(row, "value", limits[1])]


def _shown(row: dict, side: str, limit: int) -> str | None:
    if f"{side}_schema_id" in row:
        return _cut(f"(schema {row[f'{side}_schema_id']}) {_compact(row[f'{side}_decoded'])}", limit)
    data = row.get(side)
    if data is None:
        return None if side == "key" else "null"
    if row.get(f"{side}_encoding") == "base64":
        data = base64.b64decode(data).decode("utf-8", "backslashreplace")
    return _cut(_escaped(data), limit) if data else '""'  # empty, not missing


def _escaped(text: str) -> str:
    """Control characters as escapes (\\n, \\x00): a row of the table is one line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
