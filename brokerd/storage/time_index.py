"""``.timeindex``: a sparse map from timestamps to offsets in a segment.

Kafka's format: 12-byte entries of int64 timestamp and int32 relative offset.
An entry (T, O) says T is the largest timestamp seen up to offset O, so
timestamps only increase. One slot is kept free so the segment can record its
final largest timestamp when it is rolled.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from brokerd.storage.abstract_index import AbstractIndex


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    ENTRY = struct.Struct(">qi")
    OFFSET_FIELD = 1

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries - 1

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is newer than the last entry's."""
        last = self.last_entry()
        if last is not None and timestamp <= last[0]:
            return
        if self.is_full and not skip_full_check:
            raise RuntimeError(f"attempt to append to a full time index {self.path}")
        self._append(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The last entry whose timestamp is <= ``timestamp``, or (-1, base offset)."""
        slot = self.floor_slot(timestamp)
        if slot < 0:
            return TimestampOffset(-1, self.base_offset)
        found, relative = self.entry(slot)
        return TimestampOffset(found, self.base_offset + relative)
