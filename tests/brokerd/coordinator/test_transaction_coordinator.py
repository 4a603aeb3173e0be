"""A transaction's state transitions, in-process against fakes of the broker's ports: producer
ids and epochs, Ongoing -> PrepareCommit/PrepareAbort -> CompleteCommit/CompleteAbort with the
markers written in between, fencing, timeouts on a fake clock, and a new coordinator
finishing what a previous one prepared."""

from __future__ import annotations

import asyncio

import pytest
from kafka.errors import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    NotLeaderForPartitionError,
    ProducerFencedError,
)
from kafka.record.memory_records import MemoryRecords

from brokerd.coordinator.transaction_coordinator import TransactionConfig, TransactionCoordinator
from brokerd.coordinator.transaction_log import TRANSACTION_STATE_TOPIC
from brokerd.coordinator.transaction_state import TransactionState as S
from brokerd.coordinator.txn_marker_writer import TransactionMarkerWriter, TxnMarkerAppender
from tests.brokerd.coordinator.fakes import (
    BROKER_ID,
    FakeMetadata,
    FakeProducerIds,
    FakeReplicas,
    hosted,
)

pytestmark = pytest.mark.unit

PARTITIONS = 3
MAX_TIMEOUT_MS = 60_000
TIMEOUT_MS = 10_000
TXN_ID = "loader"
ORDERS = {("orders", 0), ("orders", 1)}


class NoOffsets:
    """No transaction here commits offsets; a marker on an offsets partition would be a bug."""

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        raise AssertionError("no offsets partition is part of these transactions")


class Cluster:
    """One broker's transaction coordinator over fake replicas of every __transaction_state
    partition and of the topic its producers write to; ``coordinator(epoch)`` is the one a
    broker that leads the partitions at that leader epoch runs."""

    def __init__(self) -> None:
        self.metadata = FakeMetadata()
        self.replicas = FakeReplicas()
        hosted(self.replicas, self.metadata, TRANSACTION_STATE_TOPIC, PARTITIONS)
        hosted(self.replicas, self.metadata, "orders", 2)
        self.producer_ids = FakeProducerIds()
        self.now_ms = 1_000_000

    def coordinator(self, leader_epoch: int = 0) -> TransactionCoordinator:
        for (topic, _), replica in self.replicas.partitions.items():
            if topic == TRANSACTION_STATE_TOPIC:
                replica.leader_epoch = leader_epoch
        markers = TransactionMarkerWriter(
            BROKER_ID, self.metadata, lambda *args: None, TxnMarkerAppender(self.replicas, NoOffsets())
        )
        coordinator = TransactionCoordinator(
            BROKER_ID,
            TransactionConfig(PARTITIONS, MAX_TIMEOUT_MS),
            self.replicas,
            self.metadata,
            self.producer_ids,
            markers,
            lambda: self.now_ms,
        )
        coordinator.on_metadata_change()
        return coordinator

    def markers(self, topic: str, index: int) -> list[tuple[int, int, bool]]:
        """(producer id, epoch, commit) of each marker in the partition's log."""
        found = []
        batches = MemoryRecords(bytes(self.replicas.partitions[(topic, index)].log.data))
        while (batch := batches.next_batch()) is not None:
            if batch.is_control_batch:
                found.append((batch.producer_id, batch.producer_epoch, next(iter(batch)).type == 1))
        return found


async def completed(coordinator: TransactionCoordinator, state: S) -> None:
    """Wait until the markers are written and ``state`` is logged."""
    for _ in range(1000):
        if coordinator.describe(TXN_ID).state == state:
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"{TXN_ID} stayed {coordinator.describe(TXN_ID).state.label}")


async def ongoing(coordinator: TransactionCoordinator) -> tuple[int, int]:
    producer_id, epoch = await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS)
    await coordinator.add_partitions(TXN_ID, producer_id, epoch, set(ORDERS))
    return producer_id, epoch


def test_each_initialisation_bumps_the_epoch_of_the_same_producer_id():
    async def scenario():
        coordinator = Cluster().coordinator()
        producer_id, epoch = await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS)
        assert epoch == 0 and coordinator.describe(TXN_ID).state == S.EMPTY
        assert await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS) == (producer_id, 1)
        with pytest.raises(ProducerFencedError):
            await coordinator.add_partitions(TXN_ID, producer_id, 0, set(ORDERS))

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "commit, prepared, complete",
    [(True, S.PREPARE_COMMIT, S.COMPLETE_COMMIT), (False, S.PREPARE_ABORT, S.COMPLETE_ABORT)],
)
def test_ending_a_transaction_prepares_writes_every_marker_then_completes(commit, prepared, complete):
    async def scenario():
        cluster = Cluster()
        coordinator = cluster.coordinator()
        producer_id, epoch = await ongoing(coordinator)
        meta = coordinator.describe(TXN_ID)
        assert (meta.state, meta.partitions, meta.start_ms) == (S.ONGOING, ORDERS, cluster.now_ms)
        await coordinator.end_txn(TXN_ID, producer_id, epoch, commit)
        assert coordinator.describe(TXN_ID).state in (prepared, complete)
        await completed(coordinator, complete)
        assert coordinator.describe(TXN_ID).partitions == frozenset()
        for index in (0, 1):
            assert cluster.markers("orders", index) == [(producer_id, epoch, commit)]
        await coordinator.end_txn(TXN_ID, producer_id, epoch, commit)  # a retry: no-op
        await coordinator.add_partitions(TXN_ID, producer_id, epoch, {("orders", 0)})
        assert coordinator.describe(TXN_ID).state == S.ONGOING  # the next transaction

    asyncio.run(scenario())


def test_requests_that_do_not_fit_the_state_or_the_producer_are_refused():
    async def scenario():
        coordinator = Cluster().coordinator()
        with pytest.raises(InvalidTransactionTimeoutError):
            await coordinator.init_producer_id(TXN_ID, MAX_TIMEOUT_MS + 1)
        producer_id, epoch = await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS)
        with pytest.raises(InvalidTxnStateError):  # nothing to commit yet: Empty
            await coordinator.end_txn(TXN_ID, producer_id, epoch, True)
        with pytest.raises(InvalidProducerIdMappingError):
            await coordinator.add_partitions(TXN_ID, producer_id + 1, epoch, set(ORDERS))

    asyncio.run(scenario())


def test_a_new_producer_instance_aborts_the_ongoing_transaction_of_the_old_one():
    async def scenario():
        cluster = Cluster()
        coordinator = cluster.coordinator()
        producer_id, epoch = await ongoing(coordinator)
        with pytest.raises(ConcurrentTransactionsError):
            await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS)
        await completed(coordinator, S.COMPLETE_ABORT)
        fenced_epoch = epoch + 1
        assert cluster.markers("orders", 0) == [(producer_id, fenced_epoch, False)]
        assert await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS) == (producer_id, 2)
        with pytest.raises(ProducerFencedError):
            await coordinator.end_txn(TXN_ID, producer_id, epoch, True)

    asyncio.run(scenario())


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced():
    async def scenario():
        cluster = Cluster()
        coordinator = cluster.coordinator()
        producer_id, epoch = await ongoing(coordinator)
        cluster.now_ms += TIMEOUT_MS
        coordinator.abort_timed_out()
        await asyncio.sleep(0)
        assert coordinator.describe(TXN_ID).state == S.ONGOING  # not past it yet
        cluster.now_ms += 1
        coordinator.abort_timed_out()
        await completed(coordinator, S.COMPLETE_ABORT)
        assert coordinator.describe(TXN_ID).producer_epoch == epoch + 1
        with pytest.raises(ProducerFencedError):
            await coordinator.add_partitions(TXN_ID, producer_id, epoch, set(ORDERS))

    asyncio.run(scenario())


def test_a_producer_bumping_its_own_epoch_gets_the_same_answer_on_a_retry():
    async def scenario():
        coordinator = Cluster().coordinator()
        producer_id, epoch = await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS)
        bumped = await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS, (producer_id, epoch))
        assert bumped == (producer_id, epoch + 1)
        assert await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS, (producer_id, epoch)) == bumped
        with pytest.raises(ProducerFencedError):
            await coordinator.init_producer_id(TXN_ID, TIMEOUT_MS, (producer_id + 1, 0))

    asyncio.run(scenario())


def test_a_new_coordinator_completes_the_commit_a_previous_one_prepared():
    async def scenario():
        cluster = Cluster()
        old = cluster.coordinator(leader_epoch=0)
        producer_id, epoch = await ongoing(old)
        stuck = cluster.replicas.partitions[("orders", 1)]
        stuck.append_error = NotLeaderForPartitionError("moving")  # markers keep failing
        await old.end_txn(TXN_ID, producer_id, epoch, True)
        await asyncio.sleep(0.05)
        assert old.describe(TXN_ID).state == S.PREPARE_COMMIT
        old.close()
        stuck.append_error = None
        new = cluster.coordinator(leader_epoch=1)
        await completed(new, S.COMPLETE_COMMIT)
        assert cluster.markers("orders", 1) == [(producer_id, epoch, True)]

    asyncio.run(scenario())
