"""What the offset and time indexes share: fixed-size entries, kept in memory, written to a file.

As in Kafka, an index is derived data. It is not checksummed: a crash or a
failed sanity check is answered by rebuilding it from the segment's batches.

Kafka maps its index files; here the entries live in a ``bytearray`` that
grows as they are appended, so an index holds no file descriptor (a mapping
would keep one) and a replica in use costs only its active segment's log
mapping. The array is read from the file on first use, so the idle
partitions of a broker cost no memory, and it is never preallocated: only
the entries there are take room.

The file lags the entries until ``flush``, which the log calls for every
segment before its recovery point can move past it; trimming (the segment
becomes inactive) and closing write it too, and the clean-shutdown marker is
written only after that. So an index file that lags its log after a crash
belongs to a segment from the recovery point on, which the loader rebuilds
from its batches. What the file lacks is written from where memory first
differs (appends, truncation, a rebuild), and the file is cut to the entries.

An inactive segment's index is dropped from memory once written and read
back if the segment is read again: that is the simplest way to keep the
indexes a broker reads at startup (to check every segment) from staying
resident, and retention or compaction usually reach a segment before anyone
reads it again.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path
from typing import ClassVar


class AbstractIndex:
    ENTRY: ClassVar[struct.Struct]
    OFFSET_FIELD: ClassVar[int]  # which field of an entry is the offset relative to the base

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(max_index_size // self.ENTRY.size, 2)
        self._buffer: bytearray | None = None  # the entries, once read or reset
        self._unwritten_from: int | None = None  # where the file stops matching them, None if it does
        self._length_when_read = 0

    @property
    def entries(self) -> int:
        return len(self._loaded()) // self.ENTRY.size

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def entry(self, slot: int) -> tuple[int, ...]:
        return self.ENTRY.unpack_from(self._loaded(), slot * self.ENTRY.size)

    def last_entry(self) -> tuple[int, ...] | None:
        return self.entry(self.entries - 1) if self.entries else None

    def is_sane(self) -> bool:
        """Whether the file as read looks like an index we wrote: whole entries, keys increasing."""
        entries = self.entries
        if self._length_when_read % self.ENTRY.size:
            return False
        return entries <= 1 or self.entry(entries - 1)[0] > self.entry(0)[0]

    def floor_slot(self, key: int) -> int:
        """Slot of the last entry whose first field is <= ``key``, or -1."""
        return bisect.bisect_right(range(self.entries), key, key=lambda slot: self.entry(slot)[0]) - 1

    def truncate_to(self, offset: int) -> None:
        """Forget the entries for ``offset`` and later (the file follows at the next flush)."""
        relative = offset - self.base_offset
        kept = bisect.bisect_left(
            range(self.entries), relative, key=lambda slot: self.entry(slot)[self.OFFSET_FIELD]
        )
        if kept < self.entries:
            del self._loaded()[kept * self.ENTRY.size :]
            self._mark_unwritten(kept * self.ENTRY.size)

    def reset(self) -> None:
        """Drop every entry, for a new segment or a rebuild; the file is emptied at the next flush."""
        self._buffer = bytearray()
        self._unwritten_from = 0

    def flush(self) -> None:
        """Write the entries the file lacks, cut it to the entries and fsync it."""
        if self._unwritten_from is None:
            return
        assert self._buffer is not None  # the file can only lag entries that are in memory
        with open(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644), "r+b") as file:
            file.seek(self._unwritten_from)
            file.write(self._buffer[self._unwritten_from :])
            file.truncate()
            file.flush()
            os.fsync(file.fileno())
        self._unwritten_from = None

    def close(self) -> None:
        """Write the index and let go of the entries; they are read back if used again."""
        self.flush()
        self._buffer = None

    def delete(self) -> None:
        self._buffer = self._unwritten_from = None
        self.path.unlink(missing_ok=True)

    def _append(self, *fields: int) -> None:
        if self.entries >= self.max_entries:
            raise RuntimeError(f"attempt to append to a full index {self.path}")
        buffer = self._loaded()
        self._mark_unwritten(len(buffer))
        buffer += self.ENTRY.pack(*fields)

    def _loaded(self) -> bytearray:
        """The entries, read from the file the first time; a torn last entry is left out."""
        if self._buffer is None:
            try:
                found = self.path.read_bytes()
            except FileNotFoundError:
                found = b""
            self._length_when_read = len(found)
            whole = len(found) - len(found) % self.ENTRY.size
            self._buffer = bytearray(found[:whole])
            if whole < len(found):
                self._mark_unwritten(whole)
        return self._buffer

    def _mark_unwritten(self, position: int) -> None:
        if self._unwritten_from is None or position < self._unwritten_from:
            self._unwritten_from = position
