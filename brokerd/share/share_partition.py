"""One share partition (KIP-932): what a share group's consumers hold of one topic partition,
kept by the partition's leader (Kafka's SharePartition).

Records from the share-partition start offset (SPSO) up to the end offset are in flight:
each is AVAILABLE (can be delivered), ACQUIRED by one member until its acquisition lock runs
out, ACKNOWLEDGED (accepted) or ARCHIVED (rejected, a gap, or delivered too often). Records
below the SPSO are done with; records from the end offset on have never been delivered.

The state is kept in runs of consecutive offsets that share a state, a delivery count, an
owner and a lock deadline, never per record: a fetch acquires whole record batches and a
consumer acknowledges ranges, so a run is split only where an acknowledgement or a limit
cuts into it. Runs cover every offset from the SPSO to the end offset, including offsets the
log has no record for (control batches, compacted gaps): the consumer acknowledges those as
GAP. Locks that run out are found through a heap of deadlines (``expire_locks``), not by
scanning the partition.

Nothing here does I/O: the SharePartitionManager reads the log, persists the snapshot this
class gives and answers the client.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from kafka.errors import InvalidRecordStateError, InvalidRequestError

# AcknowledgeType on the wire (ShareFetch/ShareAcknowledge AcknowledgeTypes)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


class RecordState(IntEnum):
    """Kafka's RecordState, with its persisted ids (ACQUIRED is never persisted)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True)
class ShareConfig:
    """A share group's settings for its partitions (broker defaults, or the group's own)."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000


@dataclass(eq=False)
class Run:
    """Consecutive offsets ``first``..``last`` in one state."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str | None = None
    deadline_ms: int = 0

    @property
    def count(self) -> int:
        return self.last - self.first + 1


@dataclass
class ShareCounters:
    """Running counts of what happened to a share partition's records at this leader, for
    the status `kctl watch` narrates: records acquired (delivered), those of them delivered
    again (delivery count above 1, and how many at each delivery count), released (RELEASE,
    or held by a member that left), rejected (REJECT), archived at the delivery count limit,
    returned by an expired acquisition lock, and accepted."""

    delivered: int = 0
    redelivered: int = 0
    released: int = 0
    rejected: int = 0
    archived: int = 0
    lock_expired: int = 0
    accepted: int = 0
    redelivered_at: dict[int, int] = field(default_factory=dict)  # delivery count -> records

    def to_json(self) -> dict:
        doc: dict = dict(vars(self))
        doc["redelivered_at"] = {str(count): n for count, n in sorted(self.redelivered_at.items())}
        return doc


@dataclass(frozen=True)
class AcquiredRecords:
    """What a ShareFetch response says a member now holds (AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True)
class StateBatch:
    """A persisted run: its offsets, state (AVAILABLE, ACKNOWLEDGED or ARCHIVED) and
    delivery count (Kafka's PersisterStateBatch)."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(frozen=True)
class Acknowledgement:
    """One AcknowledgementBatch: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: Sequence[int]


class SharePartition:
    def __init__(
        self,
        config: ShareConfig,
        start_offset: int,
        state_batches: Iterable[StateBatch] = (),
        counters: ShareCounters | None = None,
    ) -> None:
        self.config = config
        self.counters = counters if counters is not None else ShareCounters()
        self.start_offset = start_offset
        self.end_offset = start_offset
        self._runs: list[Run] = []
        self._deadlines: list[tuple[int, int, Run]] = []  # (deadline, tie-breaker, run)
        self._pushed = 0
        for batch in sorted(state_batches, key=lambda b: b.first_offset):
            first = max(batch.first_offset, self.end_offset)
            if batch.last_offset < first:
                continue
            if first > self.end_offset:  # an offset nobody persisted: delivered never
                self._runs.append(Run(self.end_offset, first - 1, RecordState.AVAILABLE, 0))
            state = RecordState(batch.state) if batch.state != RecordState.ACQUIRED else RecordState.AVAILABLE
            self._runs.append(Run(first, batch.last_offset, state, batch.delivery_count))
            self.end_offset = batch.last_offset + 1
        self._advance_start()

    # -- reading ---------------------------------------------------------------------------
    @property
    def runs(self) -> list[Run]:
        return list(self._runs)

    def in_flight_count(self) -> int:
        return self.end_offset - self.start_offset

    def acquired_count(self) -> int:
        return sum(r.count for r in self._runs if r.state is RecordState.ACQUIRED)

    def in_flight_status(self) -> dict[str, int]:
        """What is in flight now (one pass over the runs, made only when the partition
        changed): records acquired, records available below the end offset, and the highest
        delivery count among the records still to be acknowledged."""
        acquired = available = highest = 0
        for run in self._runs:
            if run.state is RecordState.ACQUIRED:
                acquired += run.count
            elif run.state is RecordState.AVAILABLE:
                available += run.count
            else:
                continue
            highest = max(highest, run.delivery_count)
        return {
            "acquired": acquired,
            "available": available,
            "max_delivery_count": highest,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
        }

    def next_fetch_offset(self) -> int | None:
        """Where the next fetch should read the log: the first AVAILABLE offset in flight,
        else the end offset; None when nothing can be acquired (every in-flight record is
        held and the partition is at group.share.partition.max.record.locks)."""
        for run in self._runs:
            if run.state is RecordState.AVAILABLE:
                return run.first
        if self.in_flight_count() >= self.config.max_record_locks:
            return None
        return self.end_offset

    def move_start_to(self, log_start_offset: int) -> None:
        """Retention or DeleteRecords removed records below the SPSO's reach: they can no
        longer be delivered, the SPSO moves up to the log start."""
        if log_start_offset <= self.start_offset:
            return
        self._split_at(log_start_offset)
        for run in self._runs:
            if run.first < log_start_offset:
                self._settle(run, RecordState.ARCHIVED)
        self._runs = [r for r in self._runs if r.first >= log_start_offset]
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._advance_start()

    # -- acquiring -------------------------------------------------------------------------
    def acquire(
        self, member_id: str, batches: Sequence[tuple[int, int]], max_records: int, now_ms: int
    ) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` what it may have of the record batches a fetch read
        (their first and last offsets, in order): AVAILABLE in-flight records, and records
        never delivered, whole batches of them (so up to max_records, or a little over for
        the last batch), within group.share.partition.max.record.locks in flight."""
        deadline = now_ms + self.config.record_lock_duration_ms
        acquired: list[Run] = []
        budget = max(max_records, 1)
        for base, last in batches:
            if budget <= 0:
                break
            if last < self.start_offset:
                continue
            # records in flight: only AVAILABLE ones, up to the budget
            if base < self.end_offset:
                hi = min(last, self.end_offset - 1)
                for run in self._available_between(max(base, self.start_offset), hi):
                    if budget <= 0:
                        break
                    if run.count > budget:
                        self._split_at(run.first + budget)
                    self._acquire_run(run, member_id, deadline)
                    acquired.append(run)
                    budget -= run.count
            # records never delivered: whole batches from the end offset on
            if last >= self.end_offset and budget > 0:
                room = self.config.max_record_locks - self.in_flight_count()
                if room <= 0:
                    break
                first = self.end_offset
                end = min(last, first + room - 1)
                run = Run(first, end, RecordState.AVAILABLE, 0)
                self._runs.append(run)
                self.end_offset = end + 1
                self._acquire_run(run, member_id, deadline)
                acquired.append(run)
                budget -= run.count
        return _merged(acquired)

    def _available_between(self, lo: int, hi: int) -> list[Run]:
        if lo > hi:
            return []
        self._split_at(lo)
        self._split_at(hi + 1)
        return [r for r in self._slice(lo, hi) if r.state is RecordState.AVAILABLE]

    def _acquire_run(self, run: Run, member_id: str, deadline_ms: int) -> None:
        run.state = RecordState.ACQUIRED
        run.member_id = member_id
        run.delivery_count += 1
        self.counters.delivered += run.count
        if run.delivery_count > 1:
            self.counters.redelivered += run.count
            at = self.counters.redelivered_at
            at[run.delivery_count] = at.get(run.delivery_count, 0) + run.count
        self._lock(run, deadline_ms)

    def _lock(self, run: Run, deadline_ms: int) -> None:
        run.deadline_ms = deadline_ms
        self._pushed += 1
        heapq.heappush(self._deadlines, (deadline_ms, self._pushed, run))

    # -- acknowledging ---------------------------------------------------------------------
    def acknowledge(self, member_id: str, acknowledgements: Sequence[Acknowledgement], now_ms: int) -> None:
        """Apply a member's acknowledgements, all or none: every offset must be ACQUIRED by
        that member (INVALID_RECORD_STATE otherwise, as Kafka answers a record it no longer
        holds, say after its lock ran out)."""
        for ack in acknowledgements:
            self._check_acknowledgement(member_id, ack)
        for ack in acknowledgements:
            if len(ack.types) == 1:
                self._apply(ack.first_offset, ack.last_offset, ack.types[0], now_ms)
            else:
                for offset, ack_type in zip(
                    range(ack.first_offset, ack.last_offset + 1), ack.types, strict=True
                ):
                    self._apply(offset, offset, ack_type, now_ms)
        self._advance_start()

    def _check_acknowledgement(self, member_id: str, ack: Acknowledgement) -> None:
        if ack.last_offset < ack.first_offset:
            raise InvalidRequestError(
                f"last offset {ack.last_offset} is before first offset {ack.first_offset}"
            )
        span = ack.last_offset - ack.first_offset + 1
        if len(ack.types) not in (1, span):
            raise InvalidRequestError(f"{len(ack.types)} acknowledge types for {span} offsets")
        for ack_type in ack.types:
            if ack_type not in (GAP, ACCEPT, RELEASE, REJECT):
                raise InvalidRequestError(f"unknown acknowledge type {ack_type}")
        if ack.first_offset < self.start_offset or ack.last_offset >= self.end_offset:
            raise InvalidRecordStateError(
                f"offsets {ack.first_offset}-{ack.last_offset} are not in flight "
                f"({self.start_offset}-{self.end_offset - 1})"
            )
        for run in self._overlapping(ack.first_offset, ack.last_offset):
            if run.state is not RecordState.ACQUIRED or run.member_id != member_id:
                raise InvalidRecordStateError(
                    f"the records {max(run.first, ack.first_offset)}-{min(run.last, ack.last_offset)} "
                    f"are not acquired by member {member_id}"
                )

    def _apply(self, first: int, last: int, ack_type: int, now_ms: int) -> None:
        self._split_at(first)
        self._split_at(last + 1)
        for run in self._slice(first, last):
            if ack_type == ACCEPT:
                self.counters.accepted += run.count
                self._settle(run, RecordState.ACKNOWLEDGED)
            elif ack_type == RELEASE:
                self.counters.released += run.count
                self._release(run)
            else:  # REJECT, GAP
                if ack_type == REJECT:
                    self.counters.rejected += run.count
                self._settle(run, RecordState.ARCHIVED)

    def _settle(self, run: Run, state: RecordState) -> None:
        run.state = state
        run.member_id = None
        run.deadline_ms = 0

    def _release(self, run: Run) -> None:
        """Back to AVAILABLE for another delivery, or ARCHIVED once delivered
        group.share.delivery.count.limit times."""
        limit_reached = run.delivery_count >= self.config.delivery_count_limit
        if limit_reached:
            self.counters.archived += run.count
        self._settle(run, RecordState.ARCHIVED if limit_reached else RecordState.AVAILABLE)

    # -- releasing -------------------------------------------------------------------------
    def release_member(self, member_id: str) -> int:
        """Release everything ``member_id`` holds (its share session closed, it left the
        group); returns how many records."""
        released = 0
        for run in self._runs:
            if run.state is RecordState.ACQUIRED and run.member_id == member_id:
                released += run.count
                self.counters.released += run.count
                self._release(run)
        self._advance_start()
        return released

    def next_deadline_ms(self) -> int | None:
        """When the earliest acquisition lock runs out, if any is held."""
        while self._deadlines:
            deadline, _, run = self._deadlines[0]
            if run.state is RecordState.ACQUIRED and run.deadline_ms == deadline:
                return deadline
            heapq.heappop(self._deadlines)
        return None

    def expire_locks(self, now_ms: int) -> int:
        """Release the records whose acquisition lock ran out; returns how many."""
        expired = 0
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            deadline, _, run = heapq.heappop(self._deadlines)
            if run.state is RecordState.ACQUIRED and run.deadline_ms == deadline:
                expired += run.count
                self.counters.lock_expired += run.count
                self._release(run)
        if expired:
            self._advance_start()
        return expired

    # -- persistence -----------------------------------------------------------------------
    def state_batches(self) -> list[StateBatch]:
        """The in-flight runs as persisted: ACQUIRED ones as AVAILABLE (a lock does not
        outlive its leader) with their delivery counts, adjacent equal runs merged."""
        batches: list[StateBatch] = []
        for run in self._runs:
            state = RecordState.AVAILABLE if run.state is RecordState.ACQUIRED else run.state
            if (
                batches
                and batches[-1].state == state
                and batches[-1].delivery_count == run.delivery_count
                and batches[-1].last_offset + 1 == run.first
            ):
                previous = batches.pop()
                batches.append(StateBatch(previous.first_offset, run.last, int(state), run.delivery_count))
            else:
                batches.append(StateBatch(run.first, run.last, int(state), run.delivery_count))
        return batches

    # -- runs ------------------------------------------------------------------------------
    def _index(self, offset: int) -> int:
        """The index of the run holding ``offset`` (offset within start..end-1)."""
        return bisect_right(self._runs, offset, key=lambda r: r.first) - 1

    def _split_at(self, offset: int) -> None:
        """Make ``offset`` the first offset of a run (when it is in flight)."""
        if offset <= self.start_offset or offset >= self.end_offset:
            return
        i = self._index(offset)
        run = self._runs[i]
        if run.first == offset:
            return
        tail = Run(offset, run.last, run.state, run.delivery_count, run.member_id, run.deadline_ms)
        run.last = offset - 1
        self._runs.insert(i + 1, tail)
        if tail.state is RecordState.ACQUIRED:
            self._pushed += 1
            heapq.heappush(self._deadlines, (tail.deadline_ms, self._pushed, tail))

    def _slice(self, first: int, last: int) -> list[Run]:
        """The runs within first..last (their boundaries split there already)."""
        i = max(self._index(first), 0)
        out = []
        while i < len(self._runs) and self._runs[i].first <= last:
            out.append(self._runs[i])
            i += 1
        return out

    def _overlapping(self, first: int, last: int) -> list[Run]:
        i = max(self._index(first), 0)
        out = []
        while i < len(self._runs) and self._runs[i].first <= last:
            if self._runs[i].last >= first:
                out.append(self._runs[i])
            i += 1
        return out

    def _advance_start(self) -> None:
        """The SPSO moves over every leading record that is ACKNOWLEDGED or ARCHIVED."""
        done = 0
        for run in self._runs:
            if run.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                done += 1
            else:
                break
        if done:
            self.start_offset = self._runs[done - 1].last + 1
            del self._runs[:done]
        if not self._runs:
            self.start_offset = self.end_offset


def _merged(runs: list[Run]) -> list[AcquiredRecords]:
    """Acquired runs as AcquiredRecords, adjacent ones of one delivery count as one."""
    out: list[AcquiredRecords] = []
    for run in sorted(runs, key=lambda r: r.first):
        if out and out[-1].last_offset + 1 == run.first and out[-1].delivery_count == run.delivery_count:
            out[-1] = AcquiredRecords(out[-1].first_offset, run.last, run.delivery_count)
        else:
            out.append(AcquiredRecords(run.first, run.last, run.delivery_count))
    return out
