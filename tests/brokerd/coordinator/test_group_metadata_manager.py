"""Committed offsets as the OffsetMetadataManager keeps them, in-process against fakes of the
broker's ports: commits and fetches, what a new coordinator loads back, transactional offsets
and their markers, retention, deletion, and how failed writes are reported."""

from __future__ import annotations

import asyncio
import time

import pytest
from kafka.errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    NonEmptyGroupError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    RequestTimedOutError,
)

from brokerd.coordinator.classic_group import GroupState, Member
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC, CommittedOffset
from brokerd.coordinator.txn_marker_writer import TxnMarker, TxnMarkerAppender
from tests.brokerd.coordinator.fakes import BROKER_ID, FakeMetadata, FakeReplicas, group_coordinator, hosted

pytestmark = pytest.mark.unit

PARTITIONS = 3
RETENTION_MS = 60_000
GROUP = "g"
PRODUCER_ID, PRODUCER_EPOCH = 42, 0


class Offsets:
    """A group coordinator, its groups and its offsets store over fake replicas;
    ``reloaded`` is the store a new coordinator builds from the same offsets partitions."""

    def __init__(self, replicas: FakeReplicas | None = None, metadata: FakeMetadata | None = None):
        self.metadata = metadata or FakeMetadata()
        self.replicas = replicas or FakeReplicas()
        if replicas is None:
            hosted(self.replicas, self.metadata, OFFSETS_TOPIC, PARTITIONS)
            hosted(self.replicas, self.metadata, "orders", 2)
        parts = group_coordinator(self.replicas, self.metadata, PARTITIONS, RETENTION_MS)
        self.coordinator, self.groups, self.manager = parts.coordinator, parts.groups, parts.offsets
        self.coordinator.on_metadata_change()

    def reloaded(self) -> Offsets:
        return Offsets(self.replicas, self.metadata)

    def offsets_partition(self):
        return self.replicas.partitions[(OFFSETS_TOPIC, self.coordinator.partition_of(GROUP))]

    async def join(self) -> str:
        """A member joins the group (a generation of its own); returns its member id."""
        member = Member("", None, "c", "h", 10_000, 10_000, "consumer", [("range", b"")])
        joined = await self.coordinator.join(GROUP, member, requires_known_member_id=False)
        return joined["member_id"]

    async def commit(self, *partitions: tuple[str, int], offset: int = 5, committed_at_ms: int = 0) -> None:
        """Commit as an admin tool does: no member, no generation."""
        await self.coordinator.commit(
            GROUP,
            -1,
            "",
            None,
            {tp: CommittedOffset(offset, commit_timestamp=committed_at_ms) for tp in partitions},
        )

    async def commit_in_txn(self, offset: int) -> None:
        await self.coordinator.commit_transactional(
            GROUP, PRODUCER_ID, PRODUCER_EPOCH, {("orders", 0): CommittedOffset(offset)}
        )

    async def end_txn(self, commit: bool) -> None:
        """The transaction coordinator's marker on the group's offsets partition."""
        appender = TxnMarkerAppender(self.replicas, self.coordinator)
        errors = await appender.append(
            TxnMarker(PRODUCER_ID, PRODUCER_EPOCH, commit, 0),
            [(OFFSETS_TOPIC, self.coordinator.partition_of(GROUP))],
            1.0,
        )
        assert set(errors.values()) == {None}


def offsets_of(store: Offsets) -> dict[tuple[str, int], int]:
    return {tp: c.offset for tp, c in store.manager.committed(GROUP, None).items()}


def test_committed_offsets_are_fetched_and_loaded_back_by_a_new_coordinator():
    async def scenario():
        store = Offsets()
        await store.commit(("orders", 0), ("orders", 1), offset=7)
        await store.commit(("orders", 1), offset=9)
        assert offsets_of(store) == {("orders", 0): 7, ("orders", 1): 9}
        assert store.coordinator.committed(GROUP, [("orders", 1), ("other", 0)]) == {
            ("orders", 1): CommittedOffset(9),
            ("other", 0): None,
        }
        assert offsets_of(store.reloaded()) == {("orders", 0): 7, ("orders", 1): 9}

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "error, reported",
    [
        (NotEnoughReplicasError(), CoordinatorNotAvailableError),
        (RequestTimedOutError(), CoordinatorNotAvailableError),
    ],
)
def test_a_commit_the_replicas_do_not_confirm_is_retriable(error, reported):
    async def scenario():
        store = Offsets()
        store.offsets_partition().ack_error = error
        with pytest.raises(reported):
            await store.commit(("orders", 0))
        assert offsets_of(store) == {}

    asyncio.run(scenario())


def test_a_broker_that_no_longer_leads_the_partition_is_not_the_coordinator():
    async def scenario():
        store = Offsets()
        store.offsets_partition().is_leader = False
        with pytest.raises(NotCoordinatorError):
            await store.manager.commit(GROUP, {("orders", 0): CommittedOffset(1)})
        store.coordinator.on_metadata_change()
        with pytest.raises(NotCoordinatorError):
            await store.commit(("orders", 0))

    asyncio.run(scenario())


@pytest.mark.parametrize("commit", [True, False])
def test_transactional_offsets_stay_pending_until_the_marker_decides(commit):
    async def scenario():
        store = Offsets()
        await store.commit(("orders", 0), offset=3)
        await store.commit_in_txn(10)
        assert offsets_of(store) == {("orders", 0): 3}
        assert store.coordinator.unstable(GROUP) == {("orders", 0)}
        assert store.reloaded().manager.unstable(GROUP) == {("orders", 0)}  # replayed as pending
        await store.end_txn(commit)
        expected = {("orders", 0): 10 if commit else 3}
        assert store.coordinator.unstable(GROUP) == set()
        assert offsets_of(store) == expected
        assert offsets_of(store.reloaded()) == expected

    asyncio.run(scenario())


def test_offsets_past_their_retention_get_tombstones():
    async def scenario():
        store = Offsets()
        now_ms = int(time.time() * 1000)  # retention runs on the wall clock
        await store.commit(("orders", 0), committed_at_ms=now_ms - RETENTION_MS - 1)
        await store.commit(("orders", 1), committed_at_ms=now_ms)
        store.manager.remove_expired_offsets()
        assert offsets_of(store) == {("orders", 1): 5}
        assert offsets_of(store.reloaded()) == {("orders", 1): 5}

    asyncio.run(scenario())


def test_an_empty_group_whose_offsets_expire_is_removed_with_them():
    async def scenario():
        store = Offsets()
        await store.commit(("orders", 0))
        member_id = await store.join()
        store.coordinator.leave(GROUP, [(member_id, None)])
        store.manager.remove_expired_offsets()
        assert store.groups.get_group(GROUP).state == GroupState.EMPTY  # not empty long enough
        store.groups.get_group(GROUP).state_timestamp_ms -= RETENTION_MS
        store.manager.remove_expired_offsets()
        assert store.groups.get_group(GROUP) is None and offsets_of(store) == {}
        reloaded = store.reloaded()
        assert reloaded.groups.get_group(GROUP) is None and offsets_of(reloaded) == {}

    asyncio.run(scenario())


def test_the_offsets_of_a_deleted_topic_go_with_it():
    async def scenario():
        store = Offsets()
        store.metadata.leaders[("gone", 0)] = BROKER_ID
        await store.commit(("orders", 0), ("gone", 0))
        del store.metadata.leaders[("gone", 0)]
        store.coordinator.on_metadata_change()
        assert offsets_of(store) == {("orders", 0): 5}
        assert offsets_of(store.reloaded()) == {("orders", 0): 5}

    asyncio.run(scenario())


def test_deleting_a_group_needs_it_empty_and_leaves_nothing_to_load():
    async def scenario():
        store = Offsets()
        with pytest.raises(GroupIdNotFoundError):
            await store.coordinator.delete_group(GROUP)
        await store.commit(("orders", 0))
        member_id = await store.join()
        with pytest.raises(NonEmptyGroupError):
            await store.coordinator.delete_group(GROUP)
        store.coordinator.leave(GROUP, [(member_id, None)])
        await store.coordinator.delete_group(GROUP)
        assert store.coordinator.describe(GROUP).state == GroupState.DEAD
        reloaded = store.reloaded()
        assert reloaded.groups.get_group(GROUP) is None and offsets_of(reloaded) == {}

    asyncio.run(scenario())
