"""What the offset and time indexes share: fixed-size entries in a mapped file.

As in Kafka, an index is derived data. It is not checksummed: a crash or a
failed sanity check is answered by rebuilding it from the segment's batches.
The file length is the number of entries while the segment is inactive
(trimmed) and the preallocated maximum while it is the active segment.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import ClassVar

from brokerd.storage.mapped_file import MappedFile


class AbstractIndex:
    ENTRY: ClassVar[struct.Struct]
    OFFSET_FIELD: ClassVar[int]  # which field of an entry is the offset relative to the base

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.base_offset = base_offset
        self._file = MappedFile(path)
        self.max_entries = max(max_index_size // self.ENTRY.size, 2)
        self._length_at_open = self._file.capacity
        self.entries = self._file.capacity // self.ENTRY.size

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def entry(self, slot: int) -> tuple:
        return self.ENTRY.unpack_from(self._file.buffer, slot * self.ENTRY.size)

    def last_entry(self) -> tuple | None:
        return self.entry(self.entries - 1) if self.entries else None

    def is_sane(self) -> bool:
        """Whether the file as found on open looks like a trimmed index we wrote."""
        if self._length_at_open % self.ENTRY.size:
            return False
        return self.entries <= 1 or self.entry(self.entries - 1)[0] > self.entry(0)[0]

    def floor_slot(self, key: int) -> int:
        """Slot of the last entry whose first field is <= ``key``, or -1."""
        low, high = 0, self.entries - 1
        while low <= high:
            middle = (low + high) // 2
            if self.entry(middle)[0] <= key:
                low = middle + 1
            else:
                high = middle - 1
        return high

    def truncate_to(self, offset: int) -> None:
        """Forget the entries for ``offset`` and later."""
        relative = offset - self.base_offset
        while self.entries and self.entry(self.entries - 1)[self.OFFSET_FIELD] >= relative:
            self.entries -= 1

    def reset(self) -> None:
        """Drop every entry and make room for a full index again (for a rebuild)."""
        self.entries = 0
        self.preallocate()

    def preallocate(self) -> None:
        """Map room for ``max_entries`` (never less than the entries already there)."""
        self._file.resize(max(self.max_entries, self.entries) * self.ENTRY.size)

    def trim(self) -> None:
        self._file.resize(self.entries * self.ENTRY.size)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self.trim()
        self._file.close()

    def delete(self) -> None:
        self._file.delete()

    def _append(self, *fields: int) -> None:
        if self.entries >= self.max_entries:
            raise RuntimeError(f"attempt to append to a full index {self.path}")
        position = self.entries * self.ENTRY.size
        if position + self.ENTRY.size > self._file.capacity:
            self.preallocate()
        self.ENTRY.pack_into(self._file.buffer, position, *fields)
        self.entries += 1
