"""Kafka's GroupCoordinator: joins, syncs, heartbeats and committed offsets.

The coordinator of a group is the leader of its ``__consumer_offsets`` partition. Commits are
appended there and answered once the in-sync replicas have them, so they survive a restart
of every broker and the loss of the coordinator's broker; a broker that becomes leader of an
offsets partition rebuilds its cache by reading that partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from kafka.errors import (
    GroupIdNotFoundError, GroupSubscribedToTopicError,
    IllegalGenerationError, InconsistentGroupProtocolError, InvalidGroupIdError,
    InvalidSessionTimeoutError, NonEmptyGroupError, NotCoordinatorError,
    RebalanceInProgressError, UnknownMemberIdError,
)

from brokerd.coordinator.group import Group, GroupState, Member
from brokerd.coordinator.offsets_topic import (
    OFFSETS_TOPIC, CommittedOffset, OffsetsBatch, offset_key, offset_value, read_offsets_batches,
)
from brokerd.coordinator.records import InternalTopicCoordinator, build_batch, read_whole_log

log = logging.getLogger(__name__)

MIN_SESSION_TIMEOUT_MS = 1000
MAX_SESSION_TIMEOUT_MS = 1_800_000
COMMIT_TIMEOUT_S = 5.0
NO_GENERATION = -1

TopicPartition = tuple[str, int]


class GroupCoordinator(InternalTopicCoordinator):
    topic = OFFSETS_TOPIC
    partitions_setting = "offsets.topic.num.partitions"

    def __init__(self, broker):
        super().__init__(broker)
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # group -> producer id -> offsets committed in that producer's open transaction
        self.pending_txn_offsets: dict[str, dict[int, dict[TopicPartition, CommittedOffset]]] = {}
        # (offsets partition, producer id) -> (epoch, next sequence) of its transactional batches
        self._txn_sequences: dict[tuple[int, int], tuple[int, int]] = {}

    def _owned(self, group_id: str) -> None:
        """Raise unless this broker currently coordinates ``group_id``."""
        if not group_id:
            raise InvalidGroupIdError("the group id must not be empty")
        self.require_loaded(group_id)

    # -- ownership: loading and unloading offsets partitions --------------------------------
    def on_metadata_change(self) -> None:
        """Load the partitions this broker now leads, unload those it lost."""
        leading = {p for (t, p), part in self.broker.replicas.partitions.items()
                   if t == OFFSETS_TOPIC and part.is_leader}
        for partition in sorted(leading - self.loaded):
            self._load(partition)
        for partition in sorted(self.loaded - leading):
            self._unload(partition)

    def _load(self, partition: int) -> None:
        """Replay the partition: plain commits count at once, transactional ones stay pending
        until their producer's marker follows (commit applies them, abort drops them)."""
        count = 0
        for chunk in read_whole_log(self.broker.replicas.get(OFFSETS_TOPIC, partition).log):
            for batch in read_offsets_batches(chunk):
                self._replay(partition, batch)
                count += len(batch.commits)
        self.loaded.add(partition)
        log.info("loaded %d offset commit record(s) from %s-%d", count, OFFSETS_TOPIC, partition)

    def _replay(self, partition: int, batch: OffsetsBatch) -> None:
        key = (partition, batch.producer_id)
        if batch.marker is not None:
            if self._txn_sequences.get(key, (None,))[0] != batch.producer_epoch:
                self._txn_sequences[key] = (batch.producer_epoch, 0)  # a fencing marker
            self.on_txn_marker(partition, batch.producer_id, batch.marker)
        elif batch.transactional:
            self._txn_sequences[key] = (batch.producer_epoch, batch.next_sequence)
            for group, topic, part, committed in batch.commits:
                self._pending(group, batch.producer_id)[(topic, part)] = committed
        else:
            for group, topic, part, committed in batch.commits:
                self._cache(group, (topic, part), committed)

    def _unload(self, partition: int) -> None:
        self.loaded.discard(partition)
        known = set(self.groups) | set(self.offsets) | set(self.pending_txn_offsets)
        for group_id in [g for g in known if self.partition_of(g) == partition]:
            group = self.groups.pop(group_id, None)
            if group is not None:
                _fail_waiters(group, NotCoordinatorError())
            self.offsets.pop(group_id, None)
            self.pending_txn_offsets.pop(group_id, None)
        self._txn_sequences = {k: v for k, v in self._txn_sequences.items() if k[0] != partition}

    def _cache(self, group_id: str, tp: TopicPartition, committed: CommittedOffset | None):
        if committed is None:
            self.offsets.get(group_id, {}).pop(tp, None)
        else:
            self.offsets.setdefault(group_id, {})[tp] = committed

    # -- membership -------------------------------------------------------------------------
    async def join(self, group_id: str, member_id: str, group_instance_id: str | None,
                   client_id: str, client_host: str, session_timeout_ms: int,
                   rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]]) -> dict:
        self._owned(group_id)
        if not MIN_SESSION_TIMEOUT_MS <= session_timeout_ms <= MAX_SESSION_TIMEOUT_MS:
            raise InvalidSessionTimeoutError(f"session timeout {session_timeout_ms} ms")
        group = self.groups.setdefault(group_id, Group(group_id))
        if member_id and member_id not in group.members:
            raise UnknownMemberIdError(f"{member_id} is not a member of {group_id}")
        if not protocols or not group.supports(protocol_type, protocols):
            raise InconsistentGroupProtocolError(f"no protocol in common with {group_id}")
        if not member_id:
            member_id = f"{client_id}-{uuid.uuid4()}"
        member = group.members.get(member_id) or Member(
            member_id, group_instance_id, client_id, client_host, session_timeout_ms,
            rebalance_timeout_ms if rebalance_timeout_ms > 0 else session_timeout_ms,
            protocol_type, protocols)
        member.protocols = protocols
        group.members[member_id] = member
        group.protocol_type = protocol_type
        waiter = member.join_waiter = asyncio.get_running_loop().create_future()
        if group.state != GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(group, f"{member_id} joined")
        self._maybe_complete_join(group)
        return await waiter

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        """Ask every member to rejoin: heartbeats now answer REBALANCE_IN_PROGRESS."""
        if group.state == GroupState.COMPLETING_REBALANCE:
            _fail_sync_waiters(group, RebalanceInProgressError())
        delay = 0.0
        if group.state == GroupState.EMPTY:  # let a starting group's members arrive together
            delay = self.broker.config.get("group.initial.rebalance.delay.ms") / 1000
        group.state = GroupState.PREPARING_REBALANCE
        group.join_delay_until = time.monotonic() + delay
        log.info("group %s rebalancing: %s", group.group_id, reason)
        if group.rebalance_task is not None:
            group.rebalance_task.cancel()
        group.rebalance_task = asyncio.create_task(self._rebalance_deadline(group, delay))

    async def _rebalance_deadline(self, group: Group, delay_s: float) -> None:
        """Complete the join once the initial delay is over and everyone rejoined, or at the
        rebalance timeout, dropping the members that did not rejoin."""
        await asyncio.sleep(delay_s)
        if self._maybe_complete_join(group):
            return
        await asyncio.sleep(group.rebalance_timeout_s())
        if group.state == GroupState.PREPARING_REBALANCE:
            self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> bool:
        if (group.state == GroupState.PREPARING_REBALANCE
                and time.monotonic() >= group.join_delay_until and group.all_members_joined()):
            self._complete_join(group)
            return True
        return False

    def _complete_join(self, group: Group) -> None:
        task, group.rebalance_task = group.rebalance_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        for member_id in [m for m, member in group.members.items() if member.join_waiter is None]:
            del group.members[member_id]
        group.generation += 1
        if not group.members:
            group.state, group.leader_id, group.protocol_name = GroupState.EMPTY, None, None
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.state = GroupState.COMPLETING_REBALANCE
        log.info("group %s generation %d: %d member(s), protocol %s", group.group_id,
                 group.generation, len(group.members), group.protocol_name)
        everyone = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "metadata": m.metadata_for(group.protocol_name)}
                    for m in group.members.values()]
        now = time.monotonic()
        for member in group.members.values():
            member.session_deadline = now + member.session_timeout_ms / 1000
            waiter, member.join_waiter = member.join_waiter, None
            if not waiter.done():
                waiter.set_result({
                    "error_code": 0, "generation_id": group.generation,
                    "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
                    "leader": group.leader_id, "member_id": member.member_id,
                    "members": everyone if member.member_id == group.leader_id else []})

    def _member(self, group_id: str, member_id: str, generation: int) -> tuple[Group, Member]:
        self._owned(group_id)
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group else None
        if member is None:
            raise UnknownMemberIdError(f"{member_id!r} is not a member of {group_id!r}")
        if generation != group.generation:
            raise IllegalGenerationError(f"generation {generation} is not {group.generation}")
        member.session_deadline = time.monotonic() + member.session_timeout_ms / 1000
        return group, member

    async def sync(self, group_id: str, member_id: str, generation: int,
                   assignments: dict[str, bytes]) -> bytes:
        group, member = self._member(group_id, member_id, generation)
        if group.state == GroupState.PREPARING_REBALANCE:
            raise RebalanceInProgressError(f"group {group_id} is rebalancing")
        if group.state == GroupState.STABLE:
            return member.assignment
        waiter = member.sync_waiter = asyncio.get_running_loop().create_future()
        if member_id == group.leader_id:
            for mid, m in group.members.items():
                m.assignment = assignments.get(mid, b"")
            group.state = GroupState.STABLE
            for m in group.members.values():
                m_waiter, m.sync_waiter = m.sync_waiter, None
                if m_waiter is not None and not m_waiter.done():
                    m_waiter.set_result(m.assignment)
        return await waiter

    def heartbeat(self, group_id: str, member_id: str, generation: int) -> None:
        group, _ = self._member(group_id, member_id, generation)
        if group.state == GroupState.PREPARING_REBALANCE:
            raise RebalanceInProgressError(f"group {group_id} is rebalancing")

    def leave(self, group_id: str, member_id: str) -> None:
        self._owned(group_id)
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            raise UnknownMemberIdError(f"{member_id!r} is not a member of {group_id!r}")
        self._remove_member(group, member_id, "left the group")

    def _remove_member(self, group: Group, member_id: str, why: str) -> None:
        member = group.members.pop(member_id)
        for waiter in (member.join_waiter, member.sync_waiter):
            if waiter is not None and not waiter.done():
                waiter.set_exception(UnknownMemberIdError(f"{member_id} {why}"))
        if group.state == GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        elif group.members:
            self._prepare_rebalance(group, f"{member_id} {why}")
        else:
            group.state, group.leader_id, group.protocol_name = GroupState.EMPTY, None, None
            group.generation += 1

    def expire_sessions(self) -> None:
        """Members that stopped heartbeating for their session timeout are removed."""
        now = time.monotonic()
        for group in list(self.groups.values()):
            for member_id, member in list(group.members.items()):
                if member.join_waiter is None and now > member.session_deadline:
                    self._remove_member(group, member_id, "session timed out")

    # -- committed offsets ------------------------------------------------------------------
    async def commit(self, group_id: str, generation: int, member_id: str,
                     offsets: dict[TopicPartition, CommittedOffset]) -> None:
        """Append the commit to the group's offsets partition; return once it is replicated.

        As in Kafka, members may commit while the group is PreparingRebalance (they finish
        their current records before rejoining); only CompletingRebalance, when the new
        assignment is not yet known, refuses with REBALANCE_IN_PROGRESS.
        """
        self._owned(group_id)
        group = self.groups.get(group_id)
        if generation != NO_GENERATION or member_id or (group and group.members):
            group, _ = self._member(group_id, member_id, generation)
            if group.state == GroupState.COMPLETING_REBALANCE:
                raise RebalanceInProgressError(f"group {group_id} is completing a rebalance")
        await self._append(group_id, [(offset_key(group_id, t, p), offset_value(c))
                                      for (t, p), c in offsets.items()])
        for tp, committed in offsets.items():
            self._cache(group_id, tp, committed)

    async def commit_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                                   offsets: dict[TopicPartition, CommittedOffset]) -> None:
        """TxnOffsetCommit: the offsets join the producer's transaction. They are appended as
        a transactional batch and stay pending until the transaction's marker reaches this
        offsets partition (``on_txn_marker``)."""
        self._owned(group_id)
        index = self.partition_of(group_id)
        epoch, sequence = self._txn_sequences.get((index, producer_id), (producer_epoch, 0))
        if epoch != producer_epoch:
            sequence = 0  # a new epoch numbers its batches from 0 again
        records = [(offset_key(group_id, t, p), offset_value(c)) for (t, p), c in offsets.items()]
        partition, info = self._append_batch(
            group_id, build_batch(records, producer_id, producer_epoch, sequence))
        self._txn_sequences[(index, producer_id)] = (producer_epoch, sequence + len(records))
        self._pending(group_id, producer_id).update(offsets)
        await partition.wait_for_ack(info.last_offset, COMMIT_TIMEOUT_S)

    def unstable(self, group_id: str) -> set[TopicPartition]:
        """Partitions whose offsets an open transaction of ``group_id`` is committing (KIP-447:
        an OffsetFetch that requires stable offsets waits until their markers are written)."""
        return {tp for offsets in self.pending_txn_offsets.get(group_id, {}).values()
                for tp in offsets}

    def _pending(self, group_id: str, producer_id: int) -> dict[TopicPartition, CommittedOffset]:
        return self.pending_txn_offsets.setdefault(group_id, {}).setdefault(producer_id, {})

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker landed on an offsets partition led here: the producer's pending
        offsets of every group of that partition become committed, or are dropped."""
        for group_id in [g for g in self.pending_txn_offsets if self.partition_of(g) == partition]:
            offsets = self.pending_txn_offsets[group_id].pop(producer_id, {})
            if not self.pending_txn_offsets[group_id]:
                del self.pending_txn_offsets[group_id]
            for tp, committed in offsets.items() if commit else ():
                self._cache(group_id, tp, committed)

    async def _append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        if records:
            partition, info = self._append_batch(group_id, build_batch(records))
            await partition.wait_for_ack(info.last_offset, COMMIT_TIMEOUT_S)

    def _append_batch(self, group_id: str, batch: bytes):
        try:
            partition = self.broker.replicas.get_leader(OFFSETS_TOPIC, self.partition_of(group_id))
        except Exception as exc:
            raise NotCoordinatorError(str(exc)) from exc
        return partition, partition.append_as_leader(batch, acks=-1)

    def committed(self, group_id: str, partitions: list[TopicPartition] | None
                  ) -> dict[TopicPartition, CommittedOffset | None]:
        self._owned(group_id)
        known = self.offsets.get(group_id, {})
        if partitions is None:
            return dict(known)
        return {tp: known.get(tp) for tp in partitions}

    # -- administration ---------------------------------------------------------------------
    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every group coordinated here."""
        names = set(self.groups) | {g for g, offs in self.offsets.items() if offs}
        rows = []
        for name in sorted(names):
            group = self.groups.get(name) or Group(name)
            rows.append((name, group.protocol_type or "", group.state.value))
        return rows

    def describe(self, group_id: str) -> Group:
        self._owned(group_id)
        if group_id in self.groups:
            return self.groups[group_id]
        state = GroupState.EMPTY if self.offsets.get(group_id) else GroupState.DEAD
        return Group(group_id, state=state)

    async def delete_group(self, group_id: str) -> None:
        self._owned(group_id)
        group = self.groups.get(group_id)
        if group is not None and group.members:
            raise NonEmptyGroupError(f"group {group_id} has active members")
        if group is None and not self.offsets.get(group_id):
            raise GroupIdNotFoundError(f"group {group_id} does not exist")
        await self.delete_offsets(group_id, list(self.offsets.get(group_id, {})))
        self.groups.pop(group_id, None)
        self.offsets.pop(group_id, None)

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition]) -> None:
        self._owned(group_id)
        group = self.groups.get(group_id)
        if group is not None and group.members and partitions:
            raise GroupSubscribedToTopicError(f"group {group_id} has active members")
        await self._append(group_id, [(offset_key(group_id, t, p), None) for t, p in partitions])
        for tp in partitions:
            self._cache(group_id, tp, None)


def _fail_sync_waiters(group: Group, exc: Exception) -> None:
    for member in group.members.values():
        waiter, member.sync_waiter = member.sync_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)


def _fail_waiters(group: Group, exc: Exception) -> None:
    _fail_sync_waiters(group, exc)
    for member in group.members.values():
        waiter, member.join_waiter = member.join_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
