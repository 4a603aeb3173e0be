"""Offset planning: where a query starts, how far a micro-batch goes, how ranges become tasks.

Everything here is deterministic for given inputs, which is what makes micro-batches
replayable: Spark stores the end offsets it planned in its checkpoint and, after a failure,
asks for the same [start, end) again, which must produce the same tasks and the same records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import EARLIEST, LATEST, Offsets, TopicPartition
from kctl.spark.options import Position


class DataLossError(RuntimeError):
    """Records the query should read are gone; raised only with failOnDataLoss=true."""


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int  # exclusive

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def resolve(
    position: Position, tps: list[TopicPartition], cluster: ClusterOffsets, no_match_latest: bool, option: str
) -> Offsets:
    """Concrete offsets for every partition, so the checkpoint never holds 'latest'."""
    if position.kind == "earliest":
        return cluster.earliest(tps)
    if position.kind == "latest":
        return cluster.latest(tps)
    if position.kind == "timestamp":
        assert position.timestamp is not None  # the kind that has one
        return _by_time({tp: position.timestamp for tp in tps}, cluster, no_match_latest, option)
    _require_all(position.offsets, tps, option)
    if position.kind == "timestamps":
        return _by_time(position.offsets, cluster, no_match_latest, option)
    wanted = {tp: position.offsets[tp] for tp in tps}
    earliest = cluster.earliest([tp for tp, o in wanted.items() if o == EARLIEST])
    latest = cluster.latest([tp for tp, o in wanted.items() if o == LATEST])
    return {**wanted, **earliest, **latest}


def _require_all(given: Offsets, tps: list[TopicPartition], option: str) -> None:
    if set(given) != set(tps):
        missing = sorted(set(tps) - set(given))
        raise ValueError(
            f"{option} with specific offsets must list every partition; "
            + (
                f"missing {missing[0].topic}/{missing[0].partition}"
                if missing
                else "it names partitions the subscription does not cover"
            )
        )


def _by_time(
    times: dict[TopicPartition, int], cluster: ClusterOffsets, no_match_latest: bool, option: str
) -> Offsets:
    """Offsets of the first records at or after the times; with no such record: latest or error."""
    found = cluster.at_times(times)
    unmatched = [tp for tp, offset in found.items() if offset < 0]
    if unmatched and not no_match_latest:
        tp = unmatched[0]
        raise ValueError(
            f"{option}: no record in {tp.topic}/{tp.partition} at or after "
            f"timestamp {times[tp]} (startingOffsetsByTimestampStrategy=latest "
            "starts at the end instead)"
        )
    return {**found, **cluster.latest(unmatched)}


def advance(
    start: Offsets, latest: Offsets, earliest_of_new: Offsets, cap: Offsets | None, fail_on_data_loss: bool
) -> Offsets:
    """The end offsets of the next micro-batch, before any read limit.

    `latest` covers the partitions subscribed now. A partition not in `start` (new topic or
    partition) first enters the offsets at its earliest offset without being read, so the
    range it is later read from is in the checkpoint and replays identically. `cap` (for
    Trigger.AvailableNow) stops every partition at the offsets it had when the query began.
    """
    end: Offsets = {}
    for tp, offset in start.items():
        if tp not in latest:
            _lost(
                fail_on_data_loss,
                f"{tp.topic}/{tp.partition} no longer exists "
                f"(deleted?); records from offset {offset} may be lost",
            )
            continue
        if latest[tp] < offset:
            _lost(
                fail_on_data_loss,
                f"{tp.topic}/{tp.partition} went back from offset "
                f"{offset} to {latest[tp]} (recreated or truncated?)",
            )
            end[tp] = latest[tp]
            continue
        end[tp] = latest[tp] if cap is None else min(latest[tp], max(offset, cap.get(tp, offset)))
    for tp in latest:
        if tp not in start:
            end[tp] = earliest_of_new[tp]
    return end


def limit(start: Offsets, end: Offsets, max_records: int) -> Offsets:
    """Cut `end` so at most `max_records` are read in total, shared in proportion to what each
    partition has waiting (largest remainders get the spare records, ties by partition)."""
    waiting = {tp: max(0, e - start.get(tp, e)) for tp, e in end.items()}
    total = sum(waiting.values())
    if total <= max_records:
        return dict(end)
    share = {tp: n * max_records // total for tp, n in waiting.items()}
    spare = max_records - sum(share.values())
    by_remainder = sorted(waiting, key=lambda tp: (-(waiting[tp] * max_records % total), tp))
    for tp in by_remainder[:spare]:
        share[tp] += 1
    return {tp: (start[tp] + share[tp] if waiting[tp] else e) for tp, e in end.items()}


def ranges(start: Offsets, end: Offsets) -> list[OffsetRange]:
    """Non-empty ranges; a partition absent from `start` is empty (see advance)."""
    found = [OffsetRange(tp.topic, tp.partition, start.get(tp, e), e) for tp, e in sorted(end.items())]
    return [r for r in found if r.size > 0]


def split(found: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """At least min_partitions tasks (when there are that many records): ranges are cut into
    equal pieces, the number of pieces of each in proportion to its size, spare pieces going
    to the ranges whose pieces are largest. No piece is empty."""
    found = list(found)
    total = sum(r.size for r in found)
    if not min_partitions or len(found) >= min_partitions or total == 0:
        return found
    parts = [min(r.size, max(1, r.size * min_partitions // total)) for r in found]
    while sum(parts) < min_partitions:
        widest = max(range(len(found)), key=lambda i: (found[i].size / parts[i], -i))
        if found[widest].size <= parts[widest]:
            break  # every piece is a single record
        parts[widest] += 1
    return [piece for r, n in zip(found, parts) for piece in _pieces(r, n)]


def _pieces(r: OffsetRange, parts: int) -> list[OffsetRange]:
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:])]


def _lost(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(message + ". Set failOnDataLoss=false to continue past it.")
