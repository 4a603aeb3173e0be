"""A transactional id's metadata and Kafka's transaction state machine.

Empty -> Ongoing (partitions added) -> PrepareCommit | PrepareAbort (EndTxn, a timeout, or a
new producer fencing the old one) -> CompleteCommit | CompleteAbort (every partition has its
marker) -> Ongoing again with the next transaction, or Empty when a producer re-initialises.
A transition is written to ``__transaction_state`` before it takes effect, so each state
carries what a new coordinator needs to finish the job after a failover.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kafka.errors import IllegalStateError

MAX_PRODUCER_EPOCH = 32767
NO_PRODUCER_EPOCH = -1

TopicPartition = tuple[str, int]


class TransactionState(IntEnum):
    """The ids are Kafka's, as written in TransactionLogValue.transaction_status."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


S = TransactionState
VALID_PREVIOUS: dict[TransactionState, set[TransactionState]] = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}
PREPARE_STATES = {S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE}
COMPLETE_STATES = {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


@dataclass
class TransactionMetadata:
    """What the coordinator knows of one transactional id (Kafka's TransactionMetadata)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState = S.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1
    # the state being written to the log right now; other requests wait for it (in memory only)
    pending: TransactionState | None = field(default=None, compare=False)
    # the epoch before the last bump a producer asked for (KIP-360), so that a retry of that
    # InitProducerId is answered with the bumped epoch instead of being fenced (in memory only)
    last_producer_epoch: int = field(default=NO_PRODUCER_EPOCH, compare=False)

    def prepare(self, state: TransactionState, now_ms: int, **changes: Any) -> TransactionMetadata:
        """The metadata after a transition to ``state``, to be written before it is adopted."""
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalStateError(
                f"{self.transactional_id}: {self.state.label} -> {state.label} is not a valid transition"
            )
        if state == S.ONGOING and self.state != S.ONGOING:
            changes.setdefault("start_ms", now_ms)
        if state in COMPLETE_STATES:
            changes.setdefault("partitions", frozenset())
        return dataclasses.replace(self, state=state, last_update_ms=now_ms, pending=None, **changes)

    def is_epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_PRODUCER_EPOCH - 1

    def fenced_epoch(self) -> int:
        """The epoch that fences the current producer when the coordinator aborts for it."""
        return min(self.producer_epoch + 1, MAX_PRODUCER_EPOCH)

    def is_expired(self, now_ms: int) -> bool:
        return self.state == S.ONGOING and self.pending is None and now_ms > self.start_ms + self.timeout_ms
