"""A deposed leader's share-partition state never reaches __share_group_state: the share
partition manager in-process, against fakes of its narrow ports (the replica it leads, the
state persister, the group settings) and a metadata refresh that brings the news of a new
leader, as it does for a broker resumed after a pause."""

from __future__ import annotations

import asyncio

import pytest
from kafka.errors import FencedLeaderEpochError, NotLeaderForPartitionError

from brokerd.share.share_partition import ACCEPT, Acknowledgement
from brokerd.share.share_partition_manager import SharePartitionManager
from brokerd.share.share_state import ShareKey, ShareState
from brokerd.waiters import Waiters
from tests.brokerd.storage.conftest import make_batch

pytestmark = pytest.mark.unit

GROUP, TOPIC, TOPIC_ID, MEMBER = "g", "payments", "00" * 16, "m1"
LOCK_MS = 50


class LedLog:
    log_start_offset = 0

    def aborted_transactions(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        return []


class LedReplica:
    """The data partition as this broker believes it leads it: at leader epoch 1, five
    records, until a metadata refresh says otherwise."""

    def __init__(self) -> None:
        self.is_leader, self.leader_epoch = True, 1
        self.high_watermark = self.last_stable_offset = 5
        self.log = LedLog()
        self.waiters = Waiters()

    def read(self, offset, max_bytes, for_follower=False, read_committed=False, min_one_message=True):
        return make_batch(5)


class Replicas:
    """The LeaderReplicas port; ``deposed`` is what the metadata log already says (another
    broker leads at leader epoch 2) and a refresh applies."""

    def __init__(self) -> None:
        self.replica = LedReplica()
        self.deposed = False
        self.refreshed = asyncio.Event()

    def get_leader(self, topic: str, index: int) -> LedReplica:
        if not self.replica.is_leader:
            raise NotLeaderForPartitionError(f"{topic}-{index} is not led here")
        return self.replica

    def refresh_metadata(self) -> None:
        if self.deposed:
            self.replica.is_leader, self.replica.leader_epoch = False, 2
        self.refreshed.set()


class Persister:
    """The StatePersister port: the state a previous leader left (offsets 0-4 not yet
    delivered), and every write."""

    def __init__(self) -> None:
        self.writes: list[ShareState] = []
        self.written = asyncio.Event()

    async def read(self, key: ShareKey) -> ShareState | None:
        return ShareState(0, 0)

    async def write(self, key: ShareKey, state: ShareState) -> None:
        self.writes.append(state)
        self.written.set()

    async def read_group(self, group_id: str) -> dict[ShareKey, ShareState]:
        return {}


class Settings:
    def share_record_lock_duration_ms(self, group_id: str) -> int:
        return LOCK_MS

    def share_delivery_count_limit(self, group_id: str) -> int:
        return 5

    def share_auto_offset_reset(self, group_id: str) -> str:
        return "earliest"

    def share_isolation_level(self, group_id: str) -> str:
        return "read_uncommitted"


async def member_holding_records(replicas: Replicas, persister: Persister) -> SharePartitionManager:
    """A member acquired offsets 0-4 from this broker, the leader at leader epoch 1."""
    manager = SharePartitionManager(
        replicas, persister, Settings(), lambda: 100, refresh_metadata=replicas.refresh_metadata
    )
    await manager.loaded(GROUP, TOPIC, TOPIC_ID, 0, 5)
    fetched = manager.fetch(GROUP, MEMBER, TOPIC, TOPIC_ID, 0, max_records=10, max_bytes=1 << 20)
    assert [(a.first_offset, a.last_offset) for a in fetched.acquired] == [(0, 4)]
    return manager


async def first_of(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    done, pending = await asyncio.wait(waits, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    for wait in pending:
        wait.cancel()
    assert done, "neither happened in 5 s"


def test_a_lock_expiry_overdue_after_a_pause_does_not_persist_a_deposed_leaders_state():
    """The broker was paused holding the member's locks; another broker took the partition
    over. When the lock timer fires after SIGCONT, the released records' state must not be
    written: this broker no longer leads the partition at leader epoch 1."""
    replicas, persister = Replicas(), Persister()

    async def scenario() -> None:
        await member_holding_records(replicas, persister)
        replicas.deposed = True
        await first_of(replicas.refreshed, persister.written)  # the expiry's check, or its write

    asyncio.run(scenario())
    assert persister.writes == []


def test_a_deposed_leader_refuses_an_acknowledgement_before_writing_it():
    """The member's acknowledgement reaches the old leader after the new one took over: it
    is refused NOT_LEADER_OR_FOLLOWER, and nothing is written for it."""
    replicas, persister = Replicas(), Persister()

    async def scenario() -> None:
        manager = await member_holding_records(replicas, persister)
        replicas.deposed = True
        with pytest.raises(NotLeaderForPartitionError):
            await manager.acknowledge(
                GROUP, MEMBER, TOPIC, TOPIC_ID, 0, [Acknowledgement(0, 4, [ACCEPT])], timeout_s=5
            )

    asyncio.run(scenario())
    assert persister.writes == []


class FencedPersister(Persister):
    """The state partition's leader already holds a newer leader's snapshot: every write is
    refused FENCED_LEADER_EPOCH."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def read(self, key: ShareKey) -> ShareState | None:
        self.reads += 1
        return await super().read(key)

    async def write(self, key: ShareKey, state: ShareState) -> None:
        raise FencedLeaderEpochError(f"{key}: leader epoch {state.leader_epoch} is stale")


def test_a_write_the_state_partition_fences_is_answered_not_leader_and_the_partition_dropped():
    """This broker still believes it leads (its metadata says so), but the state partition
    refuses its snapshot: the acknowledgement is answered NOT_LEADER_OR_FOLLOWER and the share
    partition is dropped, so its next use loads the persisted state afresh."""
    replicas, persister = Replicas(), FencedPersister()

    async def scenario() -> None:
        manager = await member_holding_records(replicas, persister)
        with pytest.raises(NotLeaderForPartitionError):
            await manager.acknowledge(
                GROUP, MEMBER, TOPIC, TOPIC_ID, 0, [Acknowledgement(0, 4, [ACCEPT])], timeout_s=5
            )
        await manager.loaded(GROUP, TOPIC, TOPIC_ID, 0, 5)

    asyncio.run(scenario())
    assert persister.reads == 2
