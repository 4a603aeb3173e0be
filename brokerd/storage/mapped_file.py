"""A file mapped into memory whose mapped length can be changed.

Segments and indexes are written and read through a shared mmap. Python's
mmap cannot grow safely while readers hold memoryviews of it, so files are
preallocated (a sparse ``ftruncate``) to the most they may hold while active
and trimmed to their real size once they stop growing.

Readers may keep memoryviews returned by ``view`` after the mapping is
replaced or the file is closed or deleted: an mmap with exported buffers
cannot be closed, so it is left to be unmapped when the last view goes away.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

_EMPTY = memoryview(b"")


def _release(mapping: mmap.mmap | None) -> None:
    if mapping is None:
        return
    try:
        mapping.close()
    except BufferError:
        pass  # memoryviews still point into it; it is unmapped when they go


class MappedFile:
    """The first ``capacity`` bytes of ``path``, mapped shared and read-write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._mmap: mmap.mmap | None = None
        self.capacity = 0
        self._map(os.fstat(self._fd).st_size)

    @property
    def buffer(self) -> mmap.mmap | memoryview:
        """The mapping, for ``struct.unpack_from``/``pack_into`` and slice assignment."""
        return self._mmap if self._mmap is not None else _EMPTY

    def view(self, start: int, end: int) -> memoryview:
        """Zero-copy slice of the mapped bytes."""
        return memoryview(self.buffer)[start:end]

    def resize(self, capacity: int) -> None:
        """Set the file length to ``capacity`` and map all of it (growth is sparse)."""
        if capacity != self.capacity:
            _release(self._mmap)
            self._mmap = None
            os.ftruncate(self._fd, capacity)
            self._map(capacity)

    def discard_from(self, position: int) -> None:
        """Turn everything from ``position`` on into a hole of zeros, keeping the length.

        Stale bytes after a truncation point must not survive: crash recovery
        would otherwise read old, still-valid batches back after newer data.
        """
        os.ftruncate(self._fd, position)
        os.ftruncate(self._fd, self.capacity)

    def flush(self) -> None:
        """Write dirty pages and the file length to disk (msync)."""
        if self._mmap is not None:
            self._mmap.flush()
        else:
            os.fsync(self._fd)

    def close(self) -> None:
        """Unmap and close; closing twice is harmless."""
        _release(self._mmap)
        self._mmap = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def _map(self, capacity: int) -> None:
        self.capacity = capacity
        if capacity:
            self._mmap = mmap.mmap(self._fd, capacity)
