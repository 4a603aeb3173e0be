"""wal2json's format-version 2 messages (one JSON object a row of
`pg_logical_slot_peek_changes`, asked for with `include-lsn`, `include-timestamp`,
`include-pk` and `include-not-null`) as transactions of row changes, in commit order.

A transaction is "B", its changes ("I", "U", "D"), then "C"; the commit's `nextlsn` (the end
of its commit record) is the transaction's position: a slot advanced to it no longer returns
it. Truncates ("T") and logical messages ("M") are left out, as Debezium leaves them by default.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

OPS = {"I": "c", "U": "u", "D": "d"}  # wal2json's actions as Debezium's ops


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # PostgreSQL's format_type: integer, numeric(10,2), timestamp without time zone, ...
    value: object  # wal2json's JSON value, or a snapshot's text
    optional: bool = True


@dataclass(frozen=True)
class Change:
    op: str  # Debezium's: c, u, d, or r for a snapshot's read
    schema: str
    table: str
    lsn: int
    row: tuple[Column, ...]  # the new row (none for a delete)
    identity: tuple[Column, ...] = ()  # the old row's replica identity (update, delete)
    key: tuple[str, ...] = ()  # the primary key's columns


@dataclass(frozen=True)
class Transaction:
    xid: int
    commit_lsn: int  # the end of its commit record
    ts_ms: int  # commit time
    changes: tuple[Change, ...]


def parse_lsn(text: str) -> int:
    high, low = text.split("/")
    return int(high, 16) << 32 | int(low, 16)


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def transactions(rows: Iterable[tuple[str, str]]) -> list[Transaction]:
    """The transactions of `(xid, data)` rows; a transaction cut off before its commit (the
    end of a peek) is left out."""
    found: list[Transaction] = []
    changes: list[Change] = []
    for xid, data in rows:
        message = json.loads(data)
        action = message["action"]
        if action == "B":
            changes = []
        elif action in OPS:
            changes.append(change(message))
        elif action == "C":
            commit = Transaction(
                int(xid), parse_lsn(message["nextlsn"]), ts_ms(message["timestamp"]), tuple(changes)
            )
            found.append(commit)
    return found


def change(message: Mapping[str, object]) -> Change:
    """One "I", "U" or "D" message as a row change."""
    return Change(
        OPS[str(message["action"])],
        str(message["schema"]),
        str(message["table"]),
        parse_lsn(str(message["lsn"])),
        _columns(message.get("columns")),
        _columns(message.get("identity")),
        tuple(str(pk["name"]) for pk in _objects(message.get("pk"))),
    )


def ts_ms(text: str) -> int:
    """Milliseconds since the epoch of PostgreSQL's `2026-11-28 11:39:08.498051+00`."""
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def _columns(found: object) -> tuple[Column, ...]:
    return tuple(
        Column(str(c["name"]), str(c["type"]), c.get("value"), bool(c.get("optional", True)))
        for c in _objects(found)
    )


def _objects(found: object) -> list[Mapping[str, object]]:
    return found if isinstance(found, list) else []
