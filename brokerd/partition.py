"""One replica of a topic partition hosted by this broker: its log plus replication state."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafka.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
)

from brokerd.state import IsrProposal, PartitionRegistration
from brokerd.storage.partition_log import AppendInfo, PartitionLog
from brokerd.waiters import Waiters, wait_any

log = logging.getLogger(__name__)

NO_EPOCH = -1

# Propose a new ISR for the partition (Kafka's AlterPartition), with the epochs it was decided
# at. The answer comes back as metadata (update), or as proposal_refused when it was not written.
AlterIsr = Callable[["Partition", IsrProposal], None]
# Told whenever something `status` shows changed, so the broker republishes only changed
# replicas and visits only those, however many it hosts.
StatusChanged = Callable[["Partition"], None]


def _now_ms() -> int:
    return int(time.time() * 1000)


class IdleFollowerSession(Protocol):
    """A follower's fetch session that stops reading the partitions it parked as idle
    (brokerd/fetch_session.py): the follower fetches on, at ``last_fetch_ms`` (wall-clock)."""

    last_fetch_ms: int

    def is_parked(self, key: tuple[str, int]) -> bool: ...

    def unpark(self, key: tuple[str, int]) -> None: ...


@dataclass
class FollowerState:
    """What the leader knows of one follower, from the Fetch requests it sends."""

    log_end_offset: int = -1
    log_start_offset: int = -1
    last_caught_up_ms: int = 0
    leader_end_at_last_fetch: int = 0
    parked_in: IdleFollowerSession | None = None

    def caught_up_ms(self, key: tuple[str, int]) -> int:
        """When the follower was last caught up: a partition parked in its session has not
        changed since, so every fetch of that session finds it caught up still."""
        session = self.parked_in
        if session is not None and session.is_parked(key):
            return max(self.last_caught_up_ms, session.last_fetch_ms)
        return self.last_caught_up_ms


class Partition:
    """Kafka's ``Partition``: who leads, at which leader epoch, who is in sync, and how far
    consumers may read.

    The high watermark is the offset below which every in-sync replica has the data; consumers
    never read past it, and acks=all is answered when it passes the produced batch. The leader
    learns followers' log end offsets from their fetch offsets; followers learn the high
    watermark from fetch responses.
    """

    def __init__(
        self,
        broker_id: int,
        topic: str,
        index: int,
        log: PartitionLog,
        alter_isr: AlterIsr,
        high_watermark: int = 0,
        status_changed: StatusChanged = lambda partition: None,
    ):
        self.broker_id = broker_id
        self.topic = topic
        self.index = index
        self.log = log
        self._alter_isr = alter_isr
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self._high_watermark = high_watermark
        self.leader_epoch_start_offset: int | None = None
        self.followers: dict[int, FollowerState] = {}
        self._high_watermark_waiting_since_ms: int | None = None
        self._status_changed = status_changed
        # counts every change a fetch could see: appends, high watermark, log start, ISR,
        # leadership (an idle follower's session fetch is answered from it, see fetch.py)
        self.changes = 0
        self._proposed_isr: IsrProposal | None = None  # an ISR change not answered yet
        self.last_truncation: dict | None = None
        self.log_start_moved_by: str | None = None
        self.waiters = Waiters()  # long-polled fetches and acks=all produces

    def __repr__(self) -> str:
        return f"{self.topic}-{self.index}"

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    @property
    def high_watermark(self) -> int:
        """Bounded by the log start and end, as Kafka's UnifiedLog bounds it: what retention or
        DeleteRecords removed was committed, and a replica cannot vouch for what it lacks."""
        return min(max(self._high_watermark, self.log.log_start_offset), self.log.log_end_offset)

    # -- applying controller decisions ------------------------------------------------------
    def update(self, record: PartitionRegistration) -> bool:
        """Apply the latest metadata; True when this broker just became leader or follower
        anew (a new leader epoch), so fetchers must be reassigned."""
        new_epoch = record.leader_epoch != self.leader_epoch
        self._forget_answered_proposal(record)
        self.replicas = list(record.replicas)
        self.isr = list(record.isr)
        self.partition_epoch = record.partition_epoch
        self.leader_id = record.leader
        self.leader_epoch = record.leader_epoch
        if new_epoch and self.is_leader:
            self._make_leader()
        elif not self.is_leader:
            self.leader_epoch_start_offset = None
        self._maybe_advance_high_watermark()
        self._wake_waiters()
        return new_epoch

    def _forget_answered_proposal(self, record: PartitionRegistration) -> None:
        """Every written ISR change, and every controller change that overtook a proposal,
        moves the partition epoch: only then is the pending proposal answered. A re-apply of
        the same epochs (a topic config change) leaves it pending, so the high watermark
        keeps waiting for a follower being added until the ISR names it."""
        proposal = self._proposed_isr
        if proposal is not None and (record.leader_epoch, record.partition_epoch) != (
            proposal.leader_epoch,
            proposal.partition_epoch,
        ):
            self._proposed_isr = None

    def stop(self) -> None:
        """This broker no longer hosts the replica (it was reassigned away): whoever waits
        on it (acks=all, long-polled fetches) is answered NOT_LEADER_OR_FOLLOWER at once."""
        self.leader_id = -1
        self._wake_waiters()

    def _make_leader(self) -> None:
        """Start a new leader epoch here (Kafka's makeLeader): followers start out caught up."""
        self._unpark_followers()
        self.leader_epoch_start_offset = self.log.log_end_offset
        self.log.maybe_assign_epoch_start_offset(self.leader_epoch, self.leader_epoch_start_offset)
        now = _now_ms()
        self.followers = {
            r: FollowerState(last_caught_up_ms=now) for r in self.replicas if r != self.broker_id
        }
        self._high_watermark_waiting_since_ms = None
        log.info("%s: leader at epoch %d, ISR %s", self, self.leader_epoch, self.isr)

    # -- leader: produce --------------------------------------------------------------------
    def append_as_leader(self, batch: bytes, acks: int) -> AppendInfo:
        self.require_leader()
        if acks == -1 and len(self.isr) < self.log.config.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self}: ISR {self.isr} is smaller than min.insync.replicas="
                f"{self.log.config.min_insync_replicas}"
            )
        info = self.log.append_as_leader(batch, self.leader_epoch)
        if not info.duplicate:
            self._maybe_advance_high_watermark()
            self._wake_waiters()
        return info

    async def wait_for_ack(self, last_offset: int, timeout_s: float) -> None:
        """acks=all: return once every in-sync replica has ``last_offset``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.high_watermark <= last_offset:
            self.require_leader()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise RequestTimedOutError(f"{self}: in-sync replicas did not confirm in time")
            await self.wait_for_change(remaining)
        if len(self.isr) < self.log.config.min_insync_replicas:
            raise NotEnoughReplicasAfterAppendError(f"{self}: ISR shrank to {self.isr}")

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Requests since KIP-320 carry the client's idea of the leader epoch: a stale one is
        fenced, a newer one means this broker has not heard of the new leader yet."""
        if current_leader_epoch in (NO_EPOCH, self.leader_epoch):
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(f"{self}: leader epoch {current_leader_epoch} is stale")
        raise UnknownLeaderEpochError(f"{self}: leader epoch {current_leader_epoch} is not known")

    def require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderForPartitionError(f"broker {self.broker_id} does not lead {self}")

    def _epoch_start_offset(self) -> int:
        """Where this leader's epoch began; only a leader has one."""
        if self.leader_epoch_start_offset is None:
            raise NotLeaderForPartitionError(f"broker {self.broker_id} does not lead {self}")
        return self.leader_epoch_start_offset

    def append_txn_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> AppendInfo:
        """The coordinator ends a transaction here. No min.insync.replicas refusal: a decided
        transaction must be completed; callers wait with ``wait_for_ack``."""
        self.require_leader()
        info = self.log.append_txn_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, self.leader_epoch
        )
        self._maybe_advance_high_watermark()
        self._wake_waiters()
        return info

    # -- leader: DeleteRecords --------------------------------------------------------------
    def delete_records_before(self, offset: int) -> int:
        """Move the log start up to ``offset`` (-1: the high watermark) and return the new
        log start. Only committed records can be deleted: beyond the high watermark is
        OFFSET_OUT_OF_RANGE, as in Kafka."""
        self.require_leader()
        target = self.high_watermark if offset == -1 else offset
        if not 0 <= target <= self.high_watermark:
            raise OffsetOutOfRangeError(
                f"{self}: cannot delete records before {offset}, the high watermark is {self.high_watermark}"
            )
        if self.log.maybe_increment_log_start_offset(target):
            self.log_start_moved_by = "DeleteRecords"
        self._wake_waiters()
        return self.log.log_start_offset

    async def wait_for_log_start(self, offset: int, timeout_s: float) -> None:
        """DeleteRecords answers once every in-sync follower has reported (in its fetches) a
        log start at or past ``offset``, Kafka's DelayedDeleteRecords."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self._followers_have_log_start(offset):
            self.require_leader()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise RequestTimedOutError(f"{self}: followers did not move their log start in time")
            await self.wait_for_change(remaining)

    def _followers_have_log_start(self, offset: int) -> bool:
        return all(
            self.followers.get(r, FollowerState()).log_start_offset >= offset
            for r in self.isr
            if r != self.broker_id
        )

    # -- leader: followers ------------------------------------------------------------------
    def record_follower_fetch(self, follower: int, fetch_offset: int, log_start_offset: int = -1) -> None:
        """A follower's fetch offset is its log end offset (Kafka's updateFollowerFetchState);
        its log start tells DeleteRecords when the follower has deleted too."""
        self.require_leader()
        leader_end = self.log.log_end_offset
        if fetch_offset > leader_end:
            raise OffsetOutOfRangeError(
                f"{self}: replica {follower} fetches from {fetch_offset}, beyond the log end {leader_end}"
            )
        state = self.followers.setdefault(follower, FollowerState())
        if log_start_offset != state.log_start_offset:
            state.log_start_offset = log_start_offset
            self._wake_waiters()
        now = _now_ms()
        if fetch_offset >= leader_end or fetch_offset >= state.leader_end_at_last_fetch:
            state.last_caught_up_ms = now
        if fetch_offset != state.log_end_offset:
            self._status_changed(self)
        state.log_end_offset = fetch_offset
        state.leader_end_at_last_fetch = leader_end
        self._maybe_expand_isr(follower, state)
        self._maybe_advance_high_watermark()

    def follower_still_caught_up(self, follower: int, fetch_offset: int) -> bool:
        """An idle follower fetches again from the log end it already reported: it is still
        caught up, and nothing else needs recomputing. False when that is not the case."""
        state = self.followers.get(follower)
        if (
            state is None
            or state.log_end_offset != fetch_offset
            or fetch_offset != self.log.log_end_offset
            or follower not in self.isr
        ):
            return False
        state.last_caught_up_ms = _now_ms()
        state.leader_end_at_last_fetch = fetch_offset
        return True

    def park_idle_follower(self, follower: int, session: IdleFollowerSession) -> None:
        """The follower's session stops reading this partition until it changes."""
        self.followers[follower].parked_in = session

    def _unpark_followers(self) -> None:
        """A change a follower must fetch: its session reads the partition again, and the
        follower counts as caught up as of its last fetch, as it was then."""
        for state in self.followers.values():
            session, state.parked_in = state.parked_in, None
            if session is not None and session.is_parked(self.key):
                state.last_caught_up_ms = max(state.last_caught_up_ms, session.last_fetch_ms)
                session.unpark(self.key)

    def _maybe_expand_isr(self, follower: int, state: FollowerState) -> None:
        caught_up = (
            state.log_end_offset >= self.high_watermark and state.log_end_offset >= self._epoch_start_offset()
        )
        if follower not in self.isr and follower in self.replicas and caught_up:
            self._propose_isr(sorted(self.isr + [follower]))

    def maybe_shrink_isr(self, replica_lag_time_max_ms: int) -> None:
        """Drop followers that have not caught up within replica.lag.time.max.ms."""
        if not self.is_leader:
            return
        now = _now_ms()
        lagging = [
            r
            for r in self.isr
            if r != self.broker_id
            and now - self.followers.get(r, FollowerState()).caught_up_ms(self.key) > replica_lag_time_max_ms
        ]
        if lagging:
            self._propose_isr([r for r in self.isr if r not in lagging])

    def _propose_isr(self, isr: list[int]) -> None:
        """Ask for an ISR change, one at a time, stamped with the epochs it is decided at:
        until the metadata answers, the high watermark waits for the replicas of both ISRs
        (Kafka's maximal ISR), so a follower being added never misses records below it and
        one being removed still counts."""
        if self._proposed_isr is None:
            self._proposed_isr = IsrProposal(self.leader_epoch, self.partition_epoch, list(isr))
            self._alter_isr(self, self._proposed_isr)

    def proposal_is_current(self, proposal: IsrProposal) -> bool:
        """Whether ``proposal`` may still be written: this broker leads at the leader epoch
        and partition epoch it was decided at. A deposed leader's proposal never is."""
        return (
            self.is_leader
            and self.leader_epoch == proposal.leader_epoch
            and self.partition_epoch == proposal.partition_epoch
        )

    def proposal_refused(self, proposal: IsrProposal) -> None:
        """``proposal`` was not written (the leader's view was stale, or the write failed);
        the metadata brings the truth, and the next fetch or lag check may propose again."""
        if self._proposed_isr is proposal:
            self._proposed_isr = None

    def _maybe_advance_high_watermark(self) -> None:
        if not self.is_leader:
            return
        maximal_isr = set(self.isr) | set(self._proposed_isr.isr if self._proposed_isr else ())
        ends = [self.log.log_end_offset] + [
            self.followers.get(r, FollowerState()).log_end_offset for r in maximal_isr if r != self.broker_id
        ]
        candidate = min(ends)
        if candidate > self.high_watermark:
            self._high_watermark = candidate
            self._high_watermark_waiting_since_ms = None
            self._wake_waiters()
        if self.log.log_end_offset > self.high_watermark and self._high_watermark_waiting_since_ms is None:
            self._high_watermark_waiting_since_ms = _now_ms()

    # -- follower ---------------------------------------------------------------------------
    def append_as_follower(
        self, records, leader_high_watermark: int, leader_log_start_offset: int = -1
    ) -> None:
        """Copy the leader's batches, then follow its high watermark and its log start
        (moved by DeleteRecords), both capped at what this replica has."""
        if records:
            self.log.append_as_follower(records)
        self.log.maybe_increment_log_start_offset(min(leader_log_start_offset, self.log.log_end_offset))
        self._high_watermark = max(self.high_watermark, leader_high_watermark)
        self._status_changed(self)

    def truncate_to(self, offset: int) -> None:
        """Remove a follower's divergent tail (Kafka's truncateTo). A leader's log is the one
        followers copy: it never truncates, whatever a stale OffsetForLeaderEpoch answer says."""
        if self.is_leader:
            raise NotLeaderForPartitionError(
                f"{self}: broker {self.broker_id} leads at leader epoch {self.leader_epoch}, "
                "and a leader does not truncate its log"
            )
        if offset < self.log.log_end_offset:
            log.info("%s: truncating divergent log from %d to %d", self, self.log.log_end_offset, offset)
            self.last_truncation = {
                "from": self.log.log_end_offset,
                "to": offset,
                "leader_epoch": self.leader_epoch,
                "time_ms": _now_ms(),
            }
            self.log.truncate_to(offset)
        self._high_watermark = self.high_watermark
        self._status_changed(self)

    # -- reads ------------------------------------------------------------------------------
    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: the high watermark, or the first offset of the
        earliest open transaction if that is lower."""
        first_unstable = self.log.first_unstable_offset
        if first_unstable is None:
            return self.high_watermark
        return min(self.high_watermark, first_unstable)

    def check_high_watermark_caught_up(self) -> None:
        """A new leader's high watermark is the one it had as a follower (or checkpointed)
        until its followers fetch; offsets answered from it could lie below what this leader
        already serves. Kafka's leader answers OFFSET_NOT_AVAILABLE (retriable) meanwhile."""
        epoch_start = self._epoch_start_offset()
        if self.high_watermark < epoch_start:
            raise OffsetNotAvailableError(
                f"{self}: the high watermark {self.high_watermark} has not reached the start "
                f"{epoch_start} of leader epoch {self.leader_epoch} yet"
            )

    def read(
        self,
        offset: int,
        max_bytes: int,
        for_follower: bool = False,
        read_committed: bool = False,
        min_one_message: bool = True,
    ) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``: up to the high watermark for
        consumers (the last stable offset for read_committed ones), up to the log end for
        followers."""
        if for_follower:
            bound = None
        else:
            bound = self.last_stable_offset if read_committed else self.high_watermark
        return self.log.read(offset, max_bytes, upper_bound_offset=bound, min_one_message=min_one_message)

    # -- waiting for change (long-poll fetches, acks=all) -----------------------------------
    async def wait_for_change(self, timeout_s: float) -> None:
        await wait_any([self.waiters], timeout_s)

    def _wake_waiters(self) -> None:
        self._status_changed(self)
        self.changes += 1
        self._unpark_followers()
        self.waiters.wake()

    # -- housekeeping -----------------------------------------------------------------------
    def enforce_retention(self, now_ms: int) -> None:
        """segment.ms rolls and retention.ms/bytes deletion, never beyond the high watermark."""
        self.log.maybe_roll_on_time(now_ms)
        if self.log.delete_retained_segments(now_ms, self.high_watermark):
            self.log_start_moved_by = "retention"
            self._wake_waiters()

    # -- what the broker publishes ----------------------------------------------------------
    @property
    def status_changes_with_time(self) -> bool:
        """A leader whose records wait for the high watermark shows how long they have waited."""
        return self.is_leader and self._high_watermark_waiting_since_ms is not None

    def status(self) -> dict:
        """This replica at one moment; a leader adds what it knows of its followers, so
        views built from it never show a follower ahead of its leader or a high watermark
        above an in-sync replica's log end (each broker's own file is written at another
        moment)."""
        doc = {
            "log_start_offset": self.log.log_start_offset,
            "log_end_offset": self.log.log_end_offset,
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "open_transactions": self.log.open_transactions(),
            "leader_epoch": self.leader_epoch,
            "last_truncation": self.last_truncation,
        }
        if self.is_leader:
            doc["leader_view"] = self._leader_view()
        return doc

    def _leader_view(self) -> dict:
        """The ISR and every replica's log end as the leader knows them (a follower's is its
        last fetch offset; None before its first fetch in this leader epoch), how long
        records have waited for the high watermark, and why the log start last moved."""
        ends = {
            str(r): self.log.log_end_offset
            if r == self.broker_id
            else _known(self.followers.get(r, FollowerState()).log_end_offset)
            for r in self.replicas
        }
        since = self._high_watermark_waiting_since_ms
        return {
            "isr": list(self.isr),
            "log_end_offsets": ends,
            "min_insync_replicas": self.log.config.min_insync_replicas,
            "high_watermark_waiting_ms": 0 if since is None else _now_ms() - since,
            "log_start_moved_by": self.log_start_moved_by,
        }


def _known(offset: int) -> int | None:
    return None if offset < 0 else offset
