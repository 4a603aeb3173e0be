"""``.index``: a sparse map from offsets to byte positions in a segment.

Kafka's format: 8-byte entries of int32 offset relative to the segment's base
offset and int32 physical position. An entry (O, P) says the batch starting at
byte P ends at offset O; reads binary-search it, then walk batch headers
forward from P, so one entry every ``index.interval.bytes`` is enough.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from brokerd.storage.abstract_index import AbstractIndex


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    ENTRY = struct.Struct(">ii")
    OFFSET_FIELD = 0

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        last = self.last_entry()
        if last is not None and relative <= last[0]:
            raise ValueError(f"offset {offset} is not larger than the last indexed offset")
        self._append(relative, position)

    def lookup(self, offset: int) -> OffsetPosition:
        """The last entry at or before ``offset``, or (base offset, 0)."""
        slot = self.floor_slot(offset - self.base_offset)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        relative, position = self.entry(slot)
        return OffsetPosition(self.base_offset + relative, position)

    def last_position(self) -> int:
        last = self.last_entry()
        return last[1] if last is not None else 0
