"""A file mapped into memory whose mapped length can be changed.

Segment logs are written and read through a shared mmap (indexes are kept in
memory instead, see ``abstract_index``). Python's mmap cannot grow safely
while readers hold memoryviews of it, so a file is preallocated (a sparse
``ftruncate``) to the most it may hold while active and trimmed to its real
size once it stops growing.

Readers may keep memoryviews returned by ``view`` after the mapping is
replaced or the file is closed or deleted: an mmap with exported buffers
cannot be closed, so it is left to be unmapped when the last view goes away.

A file is mapped on first use, not when it is opened, and holds no descriptor
of its own: a mapping costs one (the mmap keeps a duplicate), so the thousands
of idle, empty partitions of a broker cost none, and a broker with many
partitions stays within its open file limit.
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
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
        self._mmap: mmap.mmap | None = None
        self.capacity = os.stat(path).st_size

    @property
    def buffer(self) -> mmap.mmap | memoryview:
        """The mapping, for ``struct.unpack_from``/``pack_into`` and slice assignment."""
        if self._mmap is None:
            if not self.capacity:
                return _EMPTY
            fd = os.open(self.path, os.O_RDWR)
            try:
                self._mmap = mmap.mmap(fd, self.capacity)
            finally:
                os.close(fd)
        return self._mmap

    def view(self, start: int, end: int) -> memoryview:
        """Zero-copy slice of the mapped bytes."""
        return memoryview(self.buffer)[start:end]

    def resize(self, capacity: int) -> None:
        """Set the file length to ``capacity`` and map all of it (growth is sparse)."""
        if capacity != self.capacity:
            _release(self._mmap)
            self._mmap = None
            os.truncate(self.path, capacity)
            self.capacity = capacity

    def discard_from(self, position: int) -> None:
        """Turn everything from ``position`` on into a hole of zeros, keeping the length.

        Stale bytes after a truncation point must not survive: crash recovery
        would otherwise read old, still-valid batches back after newer data.
        """
        os.truncate(self.path, position)
        os.truncate(self.path, self.capacity)

    def flush(self) -> None:
        """Write dirty pages and the file length to disk (msync)."""
        if self._mmap is not None:
            self._mmap.flush()
        else:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def close(self) -> None:
        """Unmap; closing twice is harmless."""
        _release(self._mmap)
        self._mmap = None

    def delete(self) -> None:
        self.close()
        self.capacity = 0
        self.path.unlink(missing_ok=True)
