"""The share partitions this broker leads (Kafka's SharePartitionManager): each share
group's SharePartition of each partition, loaded from its persisted state when first used
at a leader epoch, acquiring records for ShareFetch, taking acknowledgements (answered once
persisted), releasing a member's records when its share session closes, and expiring
acquisition locks on one timer for all of them (the earliest deadline, from a heap).

A fetch reads whole record batches from the log as Fetch does and answers them as bytes,
with the offset ranges the member acquired; records are never decoded here.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kafka.errors import (
    FencedLeaderEpochError,
    FencedStateEpochError,
    KafkaError,
    NotLeaderForPartitionError,
)

from brokerd.ports import LeaderReplica, LeaderReplicas, ShareGroupSettings
from brokerd.share.aborted import aborted_positions
from brokerd.share.share_partition import (
    Acknowledgement,
    AcquiredRecords,
    ShareConfig,
    ShareCounters,
    SharePartition,
)
from brokerd.share.share_state import ShareKey, ShareState
from brokerd.share.state_persister import StatePersister
from brokerd.storage.record_batch import iter_batch_spans
from brokerd.waiters import Waiters

log = logging.getLogger(__name__)

LOAD_RETRY_S = 0.5
READ_COMMITTED = "read_committed"


@dataclass
class _Entry:
    key: ShareKey
    topic: str
    leader_epoch: int
    partition: SharePartition | None = None  # None while loading
    state_epoch: int = 0  # of the persisted state it was loaded from
    waiters: Waiters = field(default_factory=Waiters)  # records released, locks expired, loaded
    version: int = 0  # changes made
    persisted: int = 0  # changes durable
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    load_task: asyncio.Task | None = None


@dataclass
class PartitionFetch:
    """What one partition answers a ShareFetch: whole batches and the ranges acquired."""

    records: bytes
    acquired: list[AcquiredRecords]
    watched: list[Waiters]  # what to wait on when nothing was acquired


class SharePartitionManager:
    def __init__(
        self,
        replicas: LeaderReplicas,
        persister: StatePersister,
        settings: ShareGroupSettings,
        max_record_locks: Callable[[], int],
        clock_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000),
        refresh_metadata: Callable[[], None] = lambda: None,
    ) -> None:
        self._replicas = replicas
        self._refresh_metadata = refresh_metadata
        self._persister = persister
        self._settings = settings
        self._max_record_locks = max_record_locks
        self._clock_ms = clock_ms
        self._entries: dict[ShareKey, _Entry] = {}
        self._deadlines: list[tuple[int, int, ShareKey]] = []
        self._pushed = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._background: set[asyncio.Task] = set()
        # what `kctl watch` reads: counters kept while the partition is led here, and each
        # share partition's status as last encoded, encoded again only once it changed
        self._counters: dict[ShareKey, ShareCounters] = {}
        self._status_changed: set[ShareKey] = set()
        self._status_json: dict[ShareKey, str] = {}

    def config(self, group_id: str) -> ShareConfig:
        return ShareConfig(
            self._settings.share_record_lock_duration_ms(group_id),
            self._settings.share_delivery_count_limit(group_id),
            self._max_record_locks(),
        )

    def lock_duration_ms(self, group_id: str) -> int:
        return self._settings.share_record_lock_duration_ms(group_id)

    # -- the partitions ----------------------------------------------------------------------
    def _entry(self, group_id: str, topic: str, topic_id: str, index: int) -> tuple[_Entry, LeaderReplica]:
        """The share partition of a partition led here, at the current leader epoch (a new
        epoch starts from the persisted state: this broker may have been deposed and elected
        again meanwhile)."""
        replica = self._replicas.get_leader(topic, index)
        key = ShareKey(group_id, topic_id, index)
        entry = self._entries.get(key)
        if entry is None or entry.leader_epoch != replica.leader_epoch:
            if entry is not None and entry.load_task is not None:
                entry.load_task.cancel()
            entry = _Entry(key, topic, replica.leader_epoch)
            self._entries[key] = entry
            entry.load_task = asyncio.get_running_loop().create_task(self._load(entry, replica))
        return entry, replica

    async def _load(self, entry: _Entry, replica: LeaderReplica) -> None:
        while True:
            try:
                state = await self._persister.read(entry.key)
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not replica.is_leader or replica.leader_epoch != entry.leader_epoch:
                    return
                log.warning("share partition %s: cannot read its state yet: %r", entry.key, exc)
                await asyncio.sleep(LOAD_RETRY_S)
        config = self.config(entry.key.group_id)
        entry.state_epoch = 0 if state is None else state.state_epoch
        counters = self._counters.setdefault(entry.key, ShareCounters())
        if state is None or state.deleted:
            earliest = self._settings.share_auto_offset_reset(entry.key.group_id) == "earliest"
            start = replica.log.log_start_offset if earliest else replica.high_watermark
            partition = SharePartition(config, start, counters=counters)
            entry.version += 1  # the initial SPSO is persisted, so a new leader keeps it
        else:
            partition = SharePartition(config, state.start_offset, state.state_batches, counters)
        partition.move_start_to(replica.log.log_start_offset)
        entry.partition = partition
        self._status_changed.add(entry.key)
        log.info(
            "share partition %s-%d of group %s: SPSO %d, %d in flight",
            entry.topic,
            entry.key.partition,
            entry.key.group_id,
            partition.start_offset,
            partition.in_flight_count(),
        )
        entry.waiters.wake()
        if entry.version > entry.persisted:
            self._persist_later(entry)

    async def loaded(
        self, group_id: str, topic: str, topic_id: str, index: int, timeout_s: float
    ) -> tuple[_Entry, SharePartition]:
        """The share partition, once loaded (NOT_LEADER_OR_FOLLOWER if that takes longer
        than ``timeout_s``: the client retries)."""
        entry, _ = self._entry(group_id, topic, topic_id, index)
        if entry.partition is None and entry.load_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(entry.load_task), timeout_s)
            except TimeoutError:
                pass
        if entry.partition is None:
            raise NotLeaderForPartitionError(f"the share partition {topic}-{index} of {group_id} is loading")
        return entry, entry.partition

    # -- ShareFetch ----------------------------------------------------------------------------
    def fetch(
        self,
        group_id: str,
        member_id: str,
        topic: str,
        topic_id: str,
        index: int,
        max_records: int,
        max_bytes: int,
    ) -> PartitionFetch:
        """Acquire what ``member_id`` can have of the partition now (nothing while the
        share partition loads or every record is held)."""
        entry, replica = self._entry(group_id, topic, topic_id, index)
        watched = [entry.waiters, replica.waiters]
        partition = entry.partition
        if partition is None or max_records <= 0 or max_bytes <= 0:
            return PartitionFetch(b"", [], watched)
        start = partition.start_offset
        partition.move_start_to(replica.log.log_start_offset)
        now = self._clock_ms()
        if partition.expire_locks(now) or partition.start_offset != start:
            self._status_changed.add(entry.key)
        offset = partition.next_fetch_offset()
        read_committed = self._settings.share_isolation_level(group_id) == READ_COMMITTED
        bound = replica.last_stable_offset if read_committed else replica.high_watermark
        if offset is None or offset >= bound:
            return PartitionFetch(b"", [], watched)
        data = replica.read(offset, max_bytes, read_committed=read_committed, min_one_message=True)
        spans = list(iter_batch_spans(data, 0, len(data)))
        acquired = partition.acquire(
            member_id, [(base, last) for _, base, last, _ in spans], max_records, now
        )
        if not acquired:
            return PartitionFetch(b"", [], watched)
        entry.version += 1
        self._status_changed.add(entry.key)
        self._arm(entry.key, partition)
        first, last = acquired[0].first_offset, acquired[-1].last_offset
        # batches of aborted transactions are left out: the member acknowledges their
        # offsets as gaps, so they are archived and never delivered
        skipped = (
            aborted_positions(data, spans, replica.log.aborted_transactions(spans[0][1], last + 1))
            if read_committed
            else set()
        )
        kept = [
            (position, size)
            for position, base, end, size in spans
            if end >= first and base <= last and position not in skipped
        ]
        if not skipped:
            return PartitionFetch(bytes(data[kept[0][0] : kept[-1][0] + kept[-1][1]]), acquired, watched)
        return PartitionFetch(b"".join(data[p : p + n] for p, n in kept), acquired, watched)

    # -- acknowledgements ----------------------------------------------------------------------
    async def acknowledge(
        self,
        group_id: str,
        member_id: str,
        topic: str,
        topic_id: str,
        index: int,
        acknowledgements: Sequence[Acknowledgement],
        timeout_s: float,
    ) -> None:
        """Apply the member's acknowledgements and return once they are persisted.

        A deposed leader (paused, say, while another took over) neither applies nor writes
        them: leadership at the share partition's leader epoch is checked on fresh metadata
        before (and by ``_persist`` just before the write), and again after the write, for
        a deposal while it was under way; NOT_LEADER_OR_FOLLOWER then, and the records are
        delivered again."""
        entry, partition = await self.loaded(group_id, topic, topic_id, index, timeout_s)
        self._require_leading(entry)
        partition.acknowledge(member_id, acknowledgements, self._clock_ms())
        entry.version += 1
        self._status_changed.add(entry.key)
        self._arm(entry.key, partition)
        entry.waiters.wake()  # released records can be delivered again
        await self._persist(entry)
        self._require_leading(entry)

    def release(self, group_id: str, member_id: str, partitions: Iterable[tuple[str, str, int]]) -> None:
        """The member's share session closed: what it holds of these partitions is
        available again (Kafka releases them at once rather than waiting for the locks)."""
        for _topic, topic_id, index in partitions:
            entry = self._entries.get(ShareKey(group_id, topic_id, index))
            if entry is None or entry.partition is None:
                continue
            if entry.partition.release_member(member_id):
                entry.version += 1
                self._status_changed.add(entry.key)
                entry.waiters.wake()
                self._persist_later(entry)

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member left the group or was fenced: what it holds of every share partition
        of the group led here is available again."""
        held = [
            (entry.topic, key.topic_id, key.partition)
            for key, entry in self._entries.items()
            if key.group_id == group_id
        ]
        self.release(group_id, member_id, held)

    # -- persistence ---------------------------------------------------------------------------
    async def _persist(self, entry: _Entry) -> None:
        """Write the share partition's state, unless a write since covered this change;
        writes of one share partition go one at a time, in order. Only while this broker
        still leads the partition at the entry's leader epoch: a deposed leader's state
        (an overdue lock-expiry timer after SIGCONT) never reaches __share_group_state, where
        compaction could keep it over the new leader's."""
        target = entry.version
        async with entry.write_lock:
            if entry.persisted >= target or entry.partition is None:
                return
            self._require_leading(entry)
            version = entry.version
            partition = entry.partition
            state = ShareState(
                partition.start_offset,
                entry.leader_epoch,
                tuple(partition.state_batches()),
                entry.state_epoch,
            )
            try:
                await self._persister.write(entry.key, state)
            except (FencedStateEpochError, FencedLeaderEpochError) as exc:
                self._fence(entry)
                raise NotLeaderForPartitionError(
                    f"{entry.topic}-{entry.key.partition}: group {entry.key.group_id}'s share "
                    f"state was fenced ({exc}); it is no longer led here"
                ) from exc
            entry.persisted = max(entry.persisted, version)

    def _require_leading(self, entry: _Entry) -> None:
        """NOT_LEADER_OR_FOLLOWER unless, on freshly read metadata, this broker leads the
        entry's partition at the leader epoch the entry was loaded at (its changes decided
        at): after a pause the metadata in memory is as old as the pause."""
        self._refresh_metadata()
        try:
            epoch = self._replicas.get_leader(entry.topic, entry.key.partition).leader_epoch
        except KafkaError:
            epoch = None
        if epoch != entry.leader_epoch:
            raise NotLeaderForPartitionError(
                f"{entry.topic}-{entry.key.partition} is no longer led here at leader epoch "
                f"{entry.leader_epoch}, where group {entry.key.group_id}'s share state was loaded"
            )

    def _fence(self, entry: _Entry) -> None:
        """The state partition refused the entry's snapshot: a newer leader, or an admin
        reset, wrote since it was loaded. It stops here (Kafka fences the share partition);
        a later use loads the persisted state afresh, if this broker leads then."""
        if self._entries.get(entry.key) is entry:
            self._drop(entry)

    def _drop(self, entry: _Entry) -> None:
        """Forget the share partition: its loading stops and its waiting fetches answer."""
        if entry.load_task is not None:
            entry.load_task.cancel()
        entry.waiters.wake()
        del self._entries[entry.key]
        self._counters.pop(entry.key, None)
        self._status_changed.add(entry.key)

    def _persist_later(self, entry: _Entry) -> None:
        task = asyncio.get_running_loop().create_task(self._persist_quietly(entry))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _persist_quietly(self, entry: _Entry) -> None:
        try:
            await self._persist(entry)
        except (KafkaError, OSError, TimeoutError) as exc:
            log.warning("share partition %s: state not persisted: %r", entry.key, exc)

    # -- acquisition locks ---------------------------------------------------------------------
    def _arm(self, key: ShareKey, partition: SharePartition) -> None:
        """Make the lock timer fire by the partition's earliest lock deadline."""
        deadline = partition.next_deadline_ms()
        if deadline is None:
            return
        self._pushed += 1
        heapq.heappush(self._deadlines, (deadline, self._pushed, key))
        if self._timer_at is None or deadline < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            loop = asyncio.get_running_loop()
            delay_s = max(deadline - self._clock_ms(), 0) / 1000
            self._timer = loop.call_later(delay_s, self._expire_locks)
            self._timer_at = deadline

    def _expire_locks(self) -> None:
        self._timer, self._timer_at = None, None
        now = self._clock_ms()
        due: dict[ShareKey, None] = {}
        while self._deadlines and self._deadlines[0][0] <= now:
            due[heapq.heappop(self._deadlines)[2]] = None
        for key in due:
            entry = self._entries.get(key)
            if entry is None or entry.partition is None:
                continue
            expired = entry.partition.expire_locks(now)
            if expired:
                log.info("share partition %s: %d records' acquisition locks expired", key, expired)
                entry.version += 1
                self._status_changed.add(key)
                entry.waiters.wake()
                self._persist_later(entry)
            self._arm(key, entry.partition)
        if self._deadlines and self._timer is None:
            deadline = self._deadlines[0][0]
            self._timer = asyncio.get_running_loop().call_later(
                max(deadline - self._clock_ms(), 0) / 1000, self._expire_locks
            )
            self._timer_at = deadline

    # -- admin: AlterShareGroupOffsets, DeleteShareGroupOffsets ---------------------------------
    async def reset_state(self, group_id: str, topic_id: str, index: int, start_offset: int | None) -> None:
        """Start the share partition over at ``start_offset`` (None: as the group's
        share.auto.offset.reset says, the state deleted), for a group without members. The
        state epoch rises, so whatever a leader still writes from the state it loaded
        before is superseded; a leader adopts the new state when it next loads it (see
        ``forget_idle_group``)."""
        key = ShareKey(group_id, topic_id, index)
        current = await self._persister.read(key)
        epochs = (0, 0) if current is None else (current.state_epoch, current.leader_epoch)
        await self._persister.write(
            key,
            ShareState(start_offset or 0, epochs[1], (), epochs[0] + 1, deleted=start_offset is None),
        )

    def forget_idle_group(self, group_id: str) -> None:
        """A member of a group with no share session here opens one: the group's share
        partitions are loaded again from their persisted state (which an admin may have
        reset while the group was empty), unless one still holds records or has state
        not persisted yet."""
        for key, entry in list(self._entries.items()):
            partition = entry.partition
            if (
                key.group_id == group_id
                and partition is not None
                and partition.acquired_count() == 0
                and entry.persisted >= entry.version
                and not entry.write_lock.locked()
            ):
                del self._entries[key]

    # -- describing ----------------------------------------------------------------------------
    async def persisted_state(self, group_id: str, topic_id: str, index: int) -> ShareState | None:
        """What a share partition last persisted (DescribeShareGroupOffsets), wherever it is
        led; None when the group never read the partition."""
        return await self._persister.read(ShareKey(group_id, topic_id, index))

    async def persisted_states(self, group_id: str) -> dict[ShareKey, ShareState]:
        """What every share partition of the group last persisted, wherever it is led: the
        partitions the group read (one DeleteShareGroupOffsets forgot is left out)."""
        states = await self._persister.read_group(group_id)
        return {key: state for key, state in states.items() if not state.deleted}

    def forget_unled(self) -> None:
        """Drop the share partitions of partitions no longer led here."""
        for key, entry in list(self._entries.items()):
            try:
                replica = self._replicas.get_leader(entry.topic, key.partition)
            except KafkaError:
                replica = None
            if replica is None or replica.leader_epoch != entry.leader_epoch:
                self._drop(entry)

    # -- status --------------------------------------------------------------------------------
    def status_document(self) -> bytes | None:
        """The share partitions led here as the JSON document `kctl watch` reads (a list:
        group, topic, partition, leader epoch, the running counters and what is in flight),
        or None when none changed since the last call. Only the share partitions that
        changed are visited and encoded again."""
        if not self._status_changed:
            return None
        changed, self._status_changed = self._status_changed, set()
        for key in changed:
            entry = self._entries.get(key)
            if entry is None or entry.partition is None:
                if key not in self._counters:
                    self._status_json.pop(key, None)
                continue
            status = {
                "group": key.group_id,
                "topic": entry.topic,
                "partition": key.partition,
                "leader_epoch": entry.leader_epoch,
                **entry.partition.counters.to_json(),
                **entry.partition.in_flight_status(),
            }
            self._status_json[key] = json.dumps(status, sort_keys=True)
        return ("[" + ",".join(self._status_json.values()) + "]").encode()
