"""Which record batches of a read belong to aborted transactions, for share groups whose
share.isolation.level is read_committed: Kafka's consumer rule, applied by the broker since
a ShareFetch response has no list of aborted transactions. A transactional data batch of
producer P is aborted when it lies at or after the first offset of one of P's aborted
transactions and before P's next control batch (its abort marker). One header per batch is
read; records are not."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from brokerd.storage.record_batch import read_header

Span = tuple[int, int, int, int]  # position, base offset, last offset, size


def aborted_positions(
    data: bytes | memoryview, spans: Sequence[Span], aborted: Iterable[tuple[int, int]]
) -> set[int]:
    """The positions in ``data`` of the batches of the aborted transactions ``aborted``
    ((producer id, first offset) pairs overlapping the read)."""
    starts = sorted(aborted, key=lambda a: a[1])
    if not starts:
        return set()
    open_aborted: set[int] = set()
    found: set[int] = set()
    next_start = 0
    for position, base, _, _ in spans:
        while next_start < len(starts) and starts[next_start][1] <= base:
            open_aborted.add(starts[next_start][0])
            next_start += 1
        header = read_header(data, position)
        if header.is_control:
            open_aborted.discard(header.producer_id)
        elif header.is_transactional and header.producer_id in open_aborted:
            found.add(position)
    return found
