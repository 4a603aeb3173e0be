"""Kafka's TransactionCoordinator: producer ids and epochs of transactional ids, and the
two-phase end of their transactions.

The coordinator of a transactional id is the leader of its ``__transaction_state``
partition; its coordinator epoch is that partition's leader epoch. Every state change is
appended there (acks=all) before it takes effect. Ending a transaction writes PrepareCommit
or PrepareAbort, answers the producer, writes the markers to every partition of the
transaction and then CompleteCommit or CompleteAbort. A broker that becomes leader of a
``__transaction_state`` partition loads it and finishes the transactions it finds prepared,
so a decided transaction is completed even when its coordinator dies halfway through.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafka.errors import (
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    ProducerFencedError,
    RequestTimedOutError,
    TransactionalIdNotFoundError,
    UnknownTopicOrPartitionError,
)

from brokerd.config import BrokerConfig
from brokerd.coordinator.records import InternalTopicCoordinator, build_batch, read_whole_log
from brokerd.coordinator.transaction_log import (
    TRANSACTION_STATE_TOPIC,
    read_transaction_records,
    transaction_key,
    transaction_value,
)
from brokerd.coordinator.transaction_state import (
    NO_PRODUCER_EPOCH,
    PREPARE_STATES,
    TransactionMetadata,
)
from brokerd.coordinator.transaction_state import (
    TransactionState as S,
)
from brokerd.coordinator.txn_marker_writer import (
    RETRY_BACKOFF_S,
    TransactionMarkerWriter,
    TxnMarker,
)
from brokerd.ports import HostedReplicas, MetadataView, ProducerIdGenerator, ReplicaLog

log = logging.getLogger(__name__)

WRITE_TIMEOUT_S = 5.0
TopicPartition = tuple[str, int]


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class TransactionConfig:
    """Kafka's TransactionConfig, read once at start: neither setting is dynamic."""

    num_partitions: int  # transaction.state.log.num.partitions
    max_timeout_ms: int  # transaction.max.timeout.ms

    @classmethod
    def from_config(cls, config: BrokerConfig) -> TransactionConfig:
        return cls(
            config.get("transaction.state.log.num.partitions"), config.get("transaction.max.timeout.ms")
        )


class TransactionCoordinator(InternalTopicCoordinator):
    topic = TRANSACTION_STATE_TOPIC

    def __init__(
        self,
        broker_id: int,
        config: TransactionConfig,
        replicas: HostedReplicas,
        metadata: MetadataView,
        producer_ids: ProducerIdGenerator,
        markers: TransactionMarkerWriter,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        super().__init__(broker_id, config.num_partitions, metadata)
        self.max_timeout_ms = config.max_timeout_ms
        self.replicas = replicas
        self.producer_ids = producer_ids
        self.markers = markers
        self.clock_ms = clock_ms  # wall clock: transaction start and update times, timeouts
        self.transactions: dict[str, TransactionMetadata] = {}
        self.loaded: dict[int, int] = {}  # __transaction_state partition -> coordinator epoch
        self._completions: dict[str, asyncio.Task[None]] = {}
        self._aborts: set[asyncio.Task[None]] = set()

    def _owned(self, transactional_id: str) -> int:
        """The coordinator epoch, if this broker coordinates ``transactional_id``."""
        if not transactional_id:
            raise InvalidRequestError("the transactional id must not be empty")
        return self.loaded[self.require_loaded(transactional_id)]

    def _still_owned(self, transactional_id: str, coordinator_epoch: int) -> bool:
        return self.loaded.get(self.partition_of(transactional_id)) == coordinator_epoch

    # -- ownership: loading and unloading __transaction_state partitions --------------------
    def on_metadata_change(self) -> None:
        """Load the partitions this broker now leads (again, at a new leader epoch), unload
        those it lost."""
        leading = {
            p: replica
            for (t, p), replica in self.replicas.partitions.items()
            if t == TRANSACTION_STATE_TOPIC and replica.is_leader
        }
        for partition in [
            p for p, epoch in self.loaded.items() if p not in leading or leading[p].leader_epoch != epoch
        ]:
            self._unload(partition)
        for partition, replica in sorted(leading.items()):
            if partition not in self.loaded:
                self._load(partition, replica.leader_epoch, replica.log)

    def _load(self, partition: int, coordinator_epoch: int, log_: ReplicaLog) -> None:
        """Replay the partition: each transactional id as its last record left it, and the
        transactions found prepared are completed."""
        found: dict[str, TransactionMetadata] = {}
        for chunk in read_whole_log(log_):
            for transactional_id, meta in read_transaction_records(chunk):
                if meta is None:
                    found.pop(transactional_id, None)
                else:
                    found[transactional_id] = meta
        self.transactions.update(found)
        self.loaded[partition] = coordinator_epoch
        prepared = [t for t, meta in found.items() if meta.state in PREPARE_STATES]
        log.info(
            "loaded %d transactional id(s) from %s-%d at coordinator epoch %d; "
            "completing %d prepared transaction(s)",
            len(found),
            TRANSACTION_STATE_TOPIC,
            partition,
            coordinator_epoch,
            len(prepared),
        )
        for transactional_id in prepared:
            self._start_completion(transactional_id, coordinator_epoch)

    def _unload(self, partition: int) -> None:
        del self.loaded[partition]
        for transactional_id in [t for t in self.transactions if self.partition_of(t) == partition]:
            del self.transactions[transactional_id]
            task = self._completions.pop(transactional_id, None)
            if task is not None:
                task.cancel()

    # -- the producer's requests ------------------------------------------------------------
    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None = None
    ) -> tuple[int, int]:
        """A new producer id, or the same one with a bumped epoch, which fences every older
        producer instance with this transactional id. An ongoing transaction of the previous
        instance is aborted first; the producer retries on CONCURRENT_TRANSACTIONS meanwhile.

        ``expected`` is the (producer id, epoch) of a producer bumping its own epoch to recover
        from an abortable error (KIP-360): it must still be the current one, or the one just
        bumped from (a retry), else it is fenced."""
        if not 0 < timeout_ms <= self.max_timeout_ms:
            raise InvalidTransactionTimeoutError(
                f"transaction timeout {timeout_ms} ms is outside 1..{self.max_timeout_ms} "
                f"(transaction.max.timeout.ms)"
            )
        coordinator_epoch = self._owned(transactional_id)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = self.transactions[transactional_id] = TransactionMetadata(
                transactional_id, self.producer_ids.next_id(), NO_PRODUCER_EPOCH, timeout_ms
            )
        if (
            expected is not None
            and meta.producer_epoch != NO_PRODUCER_EPOCH
            and expected[0] != meta.producer_id
        ):
            raise ProducerFencedError(f"producer id {expected[0]} no longer belongs to {transactional_id!r}")
        _check_not_busy(meta)
        if meta.state == S.ONGOING:
            await self._fence_and_abort(meta, coordinator_epoch)
            raise ConcurrentTransactionsError(
                f"aborting the ongoing transaction of {transactional_id!r} first"
            )
        expected_epoch = None if expected is None else expected[1]
        now_ms = self.clock_ms()
        if meta.is_epoch_exhausted() and expected_epoch in (None, meta.producer_epoch):
            target = meta.prepare(
                S.EMPTY,
                now_ms,
                producer_id=self.producer_ids.next_id(),
                producer_epoch=0,
                timeout_ms=timeout_ms,
            )
        elif expected_epoch is not None and expected_epoch == meta.last_producer_epoch:
            return meta.producer_id, meta.producer_epoch  # a retry of the bump it already got
        else:
            target = meta.prepare(
                S.EMPTY,
                now_ms,
                producer_epoch=_bumped(meta, expected_epoch),
                timeout_ms=timeout_ms,
                last_producer_epoch=(NO_PRODUCER_EPOCH if expected is None else meta.producer_epoch),
            )
        await self._persist(meta, target, coordinator_epoch)
        log.info(
            "transactional id %r: producer id %d, epoch %d",
            transactional_id,
            target.producer_id,
            target.producer_epoch,
        )
        return target.producer_id, target.producer_epoch

    async def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: set[TopicPartition]
    ) -> None:
        meta, coordinator_epoch = self._producer(transactional_id, producer_id, producer_epoch)
        _check_not_busy(meta)
        if meta.state == S.ONGOING and partitions <= meta.partitions:
            return
        target = meta.prepare(S.ONGOING, self.clock_ms(), partitions=meta.partitions | partitions)
        await self._persist(meta, target, coordinator_epoch)

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        meta, coordinator_epoch = self._producer(transactional_id, producer_id, producer_epoch)
        prepare, complete = (
            (S.PREPARE_COMMIT, S.COMPLETE_COMMIT) if commit else (S.PREPARE_ABORT, S.COMPLETE_ABORT)
        )
        if meta.pending is not None or meta.state == prepare:
            raise ConcurrentTransactionsError(f"{transactional_id!r} is ending its transaction")
        if meta.state == complete:
            return  # a retry of a request that already succeeded
        if meta.state != S.ONGOING:
            raise InvalidTxnStateError(
                f"{transactional_id!r} cannot {'commit' if commit else 'abort'} in state {meta.state.label}"
            )
        await self._persist(meta, meta.prepare(prepare, self.clock_ms()), coordinator_epoch)
        self._start_completion(transactional_id, coordinator_epoch)

    def _producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[TransactionMetadata, int]:
        coordinator_epoch = self._owned(transactional_id)
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            raise InvalidProducerIdMappingError(
                f"producer id {producer_id} does not belong to {transactional_id!r}"
            )
        if meta.producer_epoch != producer_epoch:
            raise ProducerFencedError(
                f"epoch {producer_epoch} of {transactional_id!r} was fenced by epoch {meta.producer_epoch}"
            )
        return meta, coordinator_epoch

    # -- administration ---------------------------------------------------------------------
    def describe(self, transactional_id: str) -> TransactionMetadata:
        self._owned(transactional_id)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            raise TransactionalIdNotFoundError(f"no transactional id {transactional_id!r}")
        return meta

    def list_transactions(
        self, states: set[str], producer_ids: set[int], min_duration_ms: int
    ) -> list[TransactionMetadata]:
        """The transactions coordinated here, filtered as ListTransactions asks: by state
        name, producer id and (min_duration_ms >= 0) time since the transaction started."""
        now = self.clock_ms()
        return [
            meta
            for meta in self.transactions.values()
            if (not states or meta.state.label in states)
            and (not producer_ids or meta.producer_id in producer_ids)
            and (min_duration_ms < 0 or now - meta.start_ms >= min_duration_ms)
        ]

    # -- aborting on the producer's behalf --------------------------------------------------
    def abort_timed_out(self) -> None:
        """Abort transactions open longer than their timeout, bumping the epoch so that the
        producer that forgot them is fenced (Kafka's abortTimedOutTransactions)."""
        now = self.clock_ms()
        for meta in [m for m in self.transactions.values() if m.is_expired(now)]:
            coordinator_epoch = self.loaded.get(self.partition_of(meta.transactional_id))
            if coordinator_epoch is None:
                continue
            log.info(
                "transactional id %r timed out after %d ms: aborting", meta.transactional_id, meta.timeout_ms
            )
            task = asyncio.create_task(self._abort_quietly(meta, coordinator_epoch))
            self._aborts.add(task)
            task.add_done_callback(self._aborts.discard)

    async def _abort_quietly(self, meta: TransactionMetadata, coordinator_epoch: int) -> None:
        try:
            await self._fence_and_abort(meta, coordinator_epoch)
        except Exception as exc:  # the next check tries again
            log.info("aborting %r failed: %r", meta.transactional_id, exc)

    async def _fence_and_abort(self, meta: TransactionMetadata, coordinator_epoch: int) -> None:
        target = meta.prepare(
            S.PREPARE_ABORT,
            self.clock_ms(),
            producer_epoch=meta.fenced_epoch(),
            last_producer_epoch=NO_PRODUCER_EPOCH,
        )
        await self._persist(meta, target, coordinator_epoch)
        self._start_completion(meta.transactional_id, coordinator_epoch)

    # -- completing prepared transactions ---------------------------------------------------
    def _start_completion(self, transactional_id: str, coordinator_epoch: int) -> None:
        task = self._completions.get(transactional_id)
        if task is None or task.done():
            self._completions[transactional_id] = asyncio.create_task(
                self._complete(transactional_id, coordinator_epoch)
            )

    async def _complete(self, transactional_id: str, coordinator_epoch: int) -> None:
        """Markers to every partition, then CompleteCommit/CompleteAbort; retried until done
        or until this broker stops coordinating the transactional id."""
        while self._still_owned(transactional_id, coordinator_epoch):
            meta = self.transactions.get(transactional_id)
            if meta is None or meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                break
            commit = meta.state == S.PREPARE_COMMIT
            marker = TxnMarker(meta.producer_id, meta.producer_epoch, commit, coordinator_epoch)
            try:
                await self.markers.write(
                    marker, meta.partitions, lambda: self._still_owned(transactional_id, coordinator_epoch)
                )
                done = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
                await self._persist(meta, meta.prepare(done, self.clock_ms()), coordinator_epoch)
                log.info("transactional id %r: %s", transactional_id, done.label)
                break
            except NotCoordinatorError:
                break
            except Exception as exc:
                log.info("completing %r failed, retrying: %r", transactional_id, exc)
                await asyncio.sleep(RETRY_BACKOFF_S)
        if self._completions.get(transactional_id) is asyncio.current_task():
            del self._completions[transactional_id]

    # -- the transaction log ----------------------------------------------------------------
    async def _persist(
        self, meta: TransactionMetadata, target: TransactionMetadata, coordinator_epoch: int
    ) -> None:
        """Write ``target`` to the log, then adopt it; requests for the same transactional id
        answer CONCURRENT_TRANSACTIONS meanwhile. On failure the old state stays."""
        meta.pending = target.state
        try:
            await self._append(target, coordinator_epoch)
        finally:
            meta.pending = None
        self.transactions[target.transactional_id] = target

    async def _append(self, target: TransactionMetadata, coordinator_epoch: int) -> None:
        """Append (acks=all), with log errors translated as Kafka's TransactionStateManager
        does, so that producers retry or look for the new coordinator."""
        transactional_id = target.transactional_id
        batch = build_batch([(transaction_key(transactional_id), transaction_value(target))])
        try:
            if not self._still_owned(transactional_id, coordinator_epoch):
                raise NotCoordinatorError(f"{transactional_id!r} moved to another coordinator")
            partition = self.replicas.get_leader(TRANSACTION_STATE_TOPIC, self.partition_of(transactional_id))
            info = partition.append_as_leader(batch, acks=-1)
            await partition.wait_for_ack(info.last_offset, WRITE_TIMEOUT_S)
        except (NotLeaderForPartitionError, UnknownTopicOrPartitionError) as exc:
            raise NotCoordinatorError(str(exc)) from exc
        except (NotEnoughReplicasError, NotEnoughReplicasAfterAppendError, RequestTimedOutError) as exc:
            raise CoordinatorNotAvailableError(str(exc)) from exc
        if not self._still_owned(transactional_id, coordinator_epoch):
            raise NotCoordinatorError(f"{transactional_id!r} moved to another coordinator")

    def close(self) -> None:
        for task in [*self._completions.values(), *self._aborts]:
            task.cancel()
        self.markers.close()


def _bumped(meta: TransactionMetadata, expected_epoch: int | None) -> int:
    """The next epoch (Kafka's prepareIncrementProducerEpoch): a new instance always gets it,
    a producer bumping its own epoch only from the current one."""
    if expected_epoch not in (None, meta.producer_epoch) and meta.producer_epoch != NO_PRODUCER_EPOCH:
        raise ProducerFencedError(
            f"epoch {expected_epoch} of {meta.transactional_id!r} was fenced by epoch {meta.producer_epoch}"
        )
    return meta.producer_epoch + 1


def _check_not_busy(meta: TransactionMetadata) -> None:
    if meta.pending is not None or meta.state in PREPARE_STATES:
        raise ConcurrentTransactionsError(f"{meta.transactional_id!r} is completing its previous transaction")
