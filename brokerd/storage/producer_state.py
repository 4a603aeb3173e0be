"""Producer state of one partition: what each producer sent last, and its open transaction.

An idempotent producer numbers its batches per partition. Remembering the
last five batches of each producer (the most a client keeps in flight) lets
the broker acknowledge a retried batch with its original offsets instead of
writing it twice, and refuse a batch that would leave a gap. A transactional
producer's first batch on the partition opens its transaction there, and the
coordinator's end-transaction marker closes it; the earliest open
transaction holds back the last stable offset (LSO) that read_committed
consumers read up to. Everything here comes from batch headers (and the
marker's type), so the state is rebuilt by replaying the log when it is
loaded or truncated.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)

from brokerd.storage.record_batch import INT32_MAX, BatchHeader

NUM_BATCHES_TO_RETAIN = 5
PRODUCER_ID_EXPIRATION_MS = 24 * 3600 * 1000  # Kafka's producer.id.expiration.ms default


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int  # the batch's max timestamp


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    current_txn_first_offset: int | None = None
    coordinator_epoch: int = -1  # of the last marker
    last_offset: int = -1  # of its newest batch or marker
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        """-1 once a new epoch began (by a marker) and no batch followed: the next must be 0."""
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """Per-producer epoch, recent sequence ranges and open transaction, for one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerStateEntry] = {}
        # producer id -> first offset of its open transaction. Transactions open in log
        # order, so the dict's order is first-offset order and the first item the earliest.
        self._open_txns: dict[int, int] = {}

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate an idempotent client batch before it is appended.

        Returns the original batch when this one is a retry of it; raises
        InvalidProducerEpochError for a fenced (older) epoch,
        InvalidTxnStateError for a non-transactional batch inside the
        producer's open transaction and OutOfOrderSequenceNumberError for a gap. A producer we know nothing
        about (new, or its batches were deleted by retention) may start at
        any sequence, as in Kafka.
        """
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return None
        _check_epoch(entry, header.producer_epoch)
        if not header.is_transactional and entry.current_txn_first_offset is not None:
            raise InvalidTxnStateError(
                f"Producer {header.producer_id} sent a non-transactional batch inside its open transaction"
            )
        if header.producer_epoch > entry.producer_epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequenceNumberError(
                    f"Producer {header.producer_id} new epoch {header.producer_epoch} must start at"
                    f" sequence 0, got {header.base_sequence}"
                )
            return None
        duplicate = entry.find_duplicate(header)
        if duplicate is None and not _in_sequence(entry.last_seq, header.base_sequence):
            raise OutOfOrderSequenceNumberError(
                f"Producer {header.producer_id} sent sequence {header.base_sequence},"
                f" expected {entry.last_seq + 1 if entry.last_seq < INT32_MAX else 0}"
            )
        return duplicate

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Refuse an end-transaction marker from a fenced (older) producer epoch, or from a
        coordinator older than the one that wrote the producer's last marker."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        _check_epoch(entry, producer_epoch)
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"Producer {producer_id}'s last marker came from coordinator epoch"
                f" {entry.coordinator_epoch}, this one from {coordinator_epoch}"
            )

    def update(self, header: BatchHeader) -> None:
        """Remember an appended data batch (offsets already assigned); a transactional one
        opens the producer's transaction unless one is open already."""
        entry = self._updated_entry(header)
        entry.batches.append(
            BatchMetadata(
                header.base_sequence,
                header.last_sequence,
                header.base_offset,
                header.last_offset,
                header.max_timestamp,
            )
        )
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = header.base_offset
            self._open_txns[header.producer_id] = header.base_offset

    def complete_txn(self, header: BatchHeader, coordinator_epoch: int) -> tuple[int, int]:
        """Close the producer's transaction with the appended marker described by ``header``.

        Returns the transaction's first offset (the marker's own offset when
        no batch of it reached this partition, as in Kafka) and the last
        stable offset once it is closed: the first offset of the earliest
        other open transaction, else the offset after the marker.
        """
        entry = self._updated_entry(header)
        entry.coordinator_epoch = coordinator_epoch
        first_offset = entry.current_txn_first_offset
        entry.current_txn_first_offset = None
        self._open_txns.pop(header.producer_id, None)
        last_stable_offset = next(iter(self._open_txns.values()), header.base_offset + 1)
        return (header.base_offset if first_offset is None else first_offset), last_stable_offset

    @property
    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest open transaction, None when none is open."""
        return next(iter(self._open_txns.values()), None)

    def active_producers(self) -> list[ProducerStateEntry]:
        """Every producer this partition remembers (DescribeProducers shows them)."""
        return list(self._producers.values())

    def open_transactions(self) -> list[dict[str, int]]:
        return [
            {
                "producer_id": pid,
                "producer_epoch": self._producers[pid].producer_epoch,
                "first_offset": first_offset,
            }
            for pid, first_offset in self._open_txns.items()
        ]

    def _updated_entry(self, header: BatchHeader) -> ProducerStateEntry:
        """The producer's entry after a batch or marker at ``header``'s epoch (a newer epoch
        forgets the old epoch's sequences but not the open transaction)."""
        entry = self._producers.get(header.producer_id)
        if entry is None:
            entry = self._producers[header.producer_id] = ProducerStateEntry(
                header.producer_id, header.producer_epoch
            )
        elif header.producer_epoch != entry.producer_epoch:
            entry.producer_epoch = header.producer_epoch
            entry.batches.clear()
        entry.last_offset = header.last_offset
        entry.last_timestamp = header.max_timestamp
        return entry

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose batches are all gone, as a reload of the log would, except
        those with an open transaction: it holds the LSO until its marker comes."""
        self._retain(lambda entry: entry.last_offset >= log_start_offset)

    def remove_expired(self, now_ms: int, expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> None:
        """Forget producers silent for longer than ``producer.id.expiration.ms``; never one
        with an open transaction (the coordinator's timeout ends it, not this)."""
        self._retain(lambda entry: now_ms - entry.last_timestamp < expiration_ms)

    def _retain(self, keep: Callable[[ProducerStateEntry], bool]) -> None:
        self._producers = {
            pid: entry
            for pid, entry in self._producers.items()
            if entry.current_txn_first_offset is not None or keep(entry)
        }

    def clear(self) -> None:
        self._producers.clear()
        self._open_txns.clear()


def _check_epoch(entry: ProducerStateEntry, producer_epoch: int) -> None:
    if producer_epoch < entry.producer_epoch:
        raise InvalidProducerEpochError(
            f"Producer {entry.producer_id} epoch {producer_epoch} is older than"
            f" the current epoch {entry.producer_epoch}"
        )
