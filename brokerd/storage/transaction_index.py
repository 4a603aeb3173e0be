"""``.txnindex``: the aborted transactions whose abort marker lies in a segment.

Kafka's format: 34-byte entries of int16 version (0), int64 producerId,
int64 firstOffset, int64 lastOffset (the marker's offset) and int64
lastStableOffset (the partition's LSO once the abort was written). A
read_committed fetch asks which aborted transactions overlap the offsets it
returns; the consumer drops those producers' records up to the marker.

Entries are appended in marker order, so ``lastOffset`` only grows. The file
is created with the first entry (most segments never see an abort) and is
derived data like the other indexes: replaying the log rebuilds it. The
entries are few (one per abort) and are also kept in memory, so a fetch never
reads the file.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path
from typing import NamedTuple

from brokerd.storage.checkpoint import write_atomically

ENTRY = struct.Struct(">hqqqq")  # 34 bytes
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The AbortedTxn entries of one segment, in ``<base offset>.txnindex``."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.entries: list[AbortedTxn] = _load(path)

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(
                f"aborted transaction ending at {txn.last_offset} does not follow"
                f" the last one, ending at {self.entries[-1].last_offset}"
            )
        self.entries.append(txn)
        with open(self.path, "ab") as file:
            file.write(ENTRY.pack(VERSION, *txn))

    def collect(self, start_offset: int, end_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping ``[start_offset, end_offset)``, and whether the search is done.

        Done means no later segment can hold one: an entry whose last stable
        offset reaches ``end_offset`` proves every transaction started before
        it had ended by then. Entries ending before ``start_offset`` are
        skipped by bisection; none of them can prove that.
        """
        found = []
        first = bisect.bisect_left(self.entries, start_offset, key=lambda txn: txn.last_offset)
        for txn in self.entries[first:]:
            if txn.first_offset < end_offset:
                found.append(txn)
            if txn.last_stable_offset >= end_offset:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Forget the transactions aborted at ``offset`` or later (their markers are gone)."""
        kept = bisect.bisect_left(self.entries, offset, key=lambda txn: txn.last_offset)
        if kept < len(self.entries):
            self.replace(self.entries[:kept])

    def replace(self, entries: list[AbortedTxn]) -> None:
        """Make the index hold exactly ``entries`` (a rebuild); the file is rewritten only if they differ."""
        if entries == self.entries and self.path.exists() == bool(entries):
            return
        self.entries = list(entries)
        if not entries:
            self.path.unlink(missing_ok=True)
            return
        write_atomically(self.path, b"".join(ENTRY.pack(VERSION, *txn) for txn in entries))

    def flush(self) -> None:
        if self.entries:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


def _load(path: Path) -> list[AbortedTxn]:
    """The entries of an existing file; a torn last entry is ignored (replay rewrites the file)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    usable = len(data) - len(data) % ENTRY.size
    return [AbortedTxn(*fields[1:]) for fields in ENTRY.iter_unpack(data[:usable])]
