"""Offset translation through offset syncs: which records the source connector writes a sync
for, and MM2's rule for turning a group's source offset into a target offset
(MM/OffsetSyncStore.java, since KAFKA-14666): the latest sync S with S.upstream <= U gives
S.downstream when U == S.upstream, else S.downstream + 1.

That rule is exact when there is a sync at U, or at the record just before U with no gap in
between. MM2 writes a sync every `offset.lag.max` records and so translates most positions a
little early (re-delivery); the mirror here writes one every second record, at both sides of
any gap in the source's offsets, and at the first and last record of every micro-batch, which
makes the rule exact for a group positioned anywhere.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from connect.mirror.records import OffsetSync


def sync_points(offsets: Sequence[int]) -> list[int]:
    """The indexes of the records (upstream offsets in order) to write offset syncs for."""
    last = len(offsets) - 1
    chosen: list[int] = []
    for i, offset in enumerate(offsets):
        gap = (i > 0 and offsets[i - 1] != offset - 1) or (i < last and offsets[i + 1] != offset + 1)
        if i in (0, last) or gap or chosen[-1] != i - 1:
            chosen.append(i)
    return chosen


class OffsetSyncStore:
    """Every sync read so far, by source partition; a later sync of an upstream offset
    replaces an earlier one (a replayed micro-batch writes its syncs again)."""

    def __init__(self) -> None:
        self._syncs: dict[tuple[str, int], dict[int, int]] = {}
        self._sorted: dict[tuple[str, int], list[int]] = {}

    def add(self, sync: OffsetSync) -> None:
        tp = (sync.topic, sync.partition)
        self._syncs.setdefault(tp, {})[sync.upstream] = sync.downstream
        self._sorted.pop(tp, None)

    def translate(self, topic: str, partition: int, upstream: int) -> int | None:
        """The target offset of a group positioned at `upstream`; None without a sync at or
        before it (MM2's -1: nothing is translated)."""
        syncs = self._syncs.get((topic, partition))
        if not syncs:
            return None
        ordered = self._sorted.setdefault((topic, partition), sorted(syncs))
        at = bisect.bisect_right(ordered, upstream) - 1
        if at < 0:
            return None
        found = ordered[at]
        return syncs[found] if found == upstream else syncs[found] + 1
