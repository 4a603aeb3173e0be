"""Idempotent producer state of one partition: what each producer sent last.

An idempotent producer numbers its batches per partition. Remembering the
last five batches of each producer (the most a client keeps in flight) lets
the broker acknowledge a retried batch with its original offsets instead of
writing it twice, and refuse a batch that would leave a gap. Everything here
comes from batch headers, so the state is rebuilt by replaying headers when
the log is loaded or truncated.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError

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

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset

    @property
    def last_timestamp(self) -> int:
        return self.batches[-1].timestamp

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """Per-producer epoch and recent sequence ranges for one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerStateEntry] = {}

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate an idempotent client batch before it is appended.

        Returns the original batch when this one is a retry of it; raises
        InvalidProducerEpochError for a fenced (older) epoch and
        OutOfOrderSequenceNumberError for a gap. A producer we know nothing
        about (new, or its batches were deleted by retention) may start at
        any sequence, as in Kafka.
        """
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Producer {header.producer_id} epoch {header.producer_epoch} is older than"
                f" the current epoch {entry.producer_epoch}"
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

    def update(self, header: BatchHeader) -> None:
        """Remember an appended batch (offsets already assigned) of an idempotent producer."""
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.producer_epoch:
            entry = ProducerStateEntry(header.producer_id, header.producer_epoch)
            self._producers[header.producer_id] = entry
        entry.batches.append(
            BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset,
                          header.last_offset, header.max_timestamp)
        )

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose batches are all gone, as a reload of the log would."""
        self._producers = {
            pid: entry for pid, entry in self._producers.items() if entry.last_offset >= log_start_offset
        }

    def remove_expired(self, now_ms: int, expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> None:
        """Forget producers silent for longer than ``producer.id.expiration.ms``."""
        self._producers = {
            pid: entry for pid, entry in self._producers.items() if now_ms - entry.last_timestamp < expiration_ms
        }

    def clear(self) -> None:
        self._producers.clear()
