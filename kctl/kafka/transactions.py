"""Kafka transactions for `kctl produce` and `kctl bench produce`.

A transaction makes a group of records atomic for read_committed consumers: they see all of
it once it commits, none of it if it aborts. The producer registers its transactional.id
with the cluster's transaction coordinator once (init_transactions, which also aborts
whatever a previous producer with the same ID left open), then begins and commits one
transaction per batch of records. Any failure or Ctrl-C aborts the open transaction, so a
run that stops half-way leaves nothing half-visible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException, Producer

from kctl.kafka.errors import FENCED, from_kafka
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import Acks

Batch = TypeVar("Batch")


def check_options(transactional_id: str | None, txn_size: int | None, acks: Acks) -> None:
    """Refuse option combinations before connecting: one line, exit 2 (usage) or 5 (value)."""
    if transactional_id is None:
        if txn_size is not None:
            raise KctlError("--txn-size needs --transactional-id", ExitCode.USAGE)
        return
    if not transactional_id:
        raise KctlError("--transactional-id must not be empty", ExitCode.INVALID_INPUT)
    if txn_size is not None and txn_size < 1:
        raise KctlError(f"--txn-size must be at least 1, not {txn_size}", ExitCode.INVALID_INPUT)
    if acks is not Acks.ALL:
        raise KctlError("--transactional-id needs --acks all: transactions are idempotent", ExitCode.USAGE)


def producer_config(txns: Transactions | None) -> dict:
    """Settings for a producer that runs `txns` (none without transactions); librdkafka turns
    on idempotence (and requires acks=all) with a transactional.id."""
    return {} if txns is None else {"transactional.id": txns.transactional_id}


class Transactions:
    """Runs batches of records as transactions of one producer, and counts the outcomes."""

    def __init__(self, transactional_id: str, timeout: float):
        self.transactional_id = transactional_id
        self.timeout = timeout
        self.committed = 0
        self.committed_records = 0
        self.aborted = 0
        self._open = False

    def run(self, producer: Producer, batches: Iterable[Batch], send: Callable[[Batch], int]) -> None:
        """One transaction per batch: `send` produces a batch's records and returns how many.
        `producer` was made with producer_config(self).

        A failure (a record refused, a delivery failed, the producer fenced) aborts the open
        transaction and raises KctlError; Ctrl-C aborts it and is re-raised.
        """
        try:
            self._call(producer.init_transactions, "register the transactional id", self.timeout)
            for batch in batches:
                self._call(producer.begin_transaction, "begin a transaction")
                self._open = True
                records = send(batch)
                self._commit(producer)
                self.committed_records += records
        except KctlError:
            self._abort(producer)
            raise
        except KafkaException as exc:  # a record refused before sending (e.g. too large)
            self._abort(producer)
            raise self.failure(exc.args[0], "produce in a transaction") from None
        except KeyboardInterrupt:
            self._abort(producer)
            raise

    def summary(self) -> str:
        return (
            f"{_count(self.committed, 'transaction')} committed "
            f"({_count(self.committed_records, 'record')}), {self.aborted} aborted"
        )

    def _commit(self, producer: Producer) -> None:
        """Flush the transaction's records and commit it; retry what librdkafka calls retriable."""
        while True:
            try:
                producer.commit_transaction()
                break
            except KafkaException as exc:
                error = exc.args[0]
                if not error.retriable() or error.txn_requires_abort() or error.fatal():
                    raise self.failure(error, "commit the transaction") from None
        self._open = False
        self.committed += 1

    def _abort(self, producer: Producer) -> None:
        """Abort the open transaction, if any: its records never reach read_committed readers.

        A fenced producer cannot abort, but need not: the coordinator aborted its transaction
        when the newer producer registered the same ID.
        """
        if not self._open:
            return
        self._open = False
        error = self._abort_error(producer)
        if error is None or error.code() in FENCED:
            self.aborted += 1
        else:
            console.warn(
                f"cannot abort the open transaction ({error.str()}); the coordinator "
                "aborts it after transaction.timeout.ms"
            )

    def _abort_error(self, producer: Producer) -> KafkaError | None:
        try:
            producer.abort_transaction(self.timeout)
        except KafkaException as exc:
            return exc.args[0]
        return None

    def _call(self, method: Callable, doing: str, *args) -> None:
        try:
            method(*args)
        except KafkaException as exc:
            raise self.failure(exc.args[0], doing) from None

    def failure(self, error: KafkaError, doing: str) -> KctlError:
        """The one-line error for a failure of this producer; fenced is exit 6."""
        if error.code() in FENCED:
            return KctlError(
                f"producer fenced: another producer registered transactional id {self.transactional_id!r}",
                ExitCode.CONFLICT,
            )
        return from_kafka(error, doing)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
