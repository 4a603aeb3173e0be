"""What a sink does with a record it cannot convert or write, as Kafka Connect's error handler
does it (RetryWithToleranceOperator, LogReporter, DeadLetterQueueReporter): the record is
reported (logged with `errors.log.enable`, put in the dead letter queue when
`errors.deadletterqueue.topic.name` is set), then skipped with `errors.tolerance=all`, or
the task fails with `none`, naming the record's topic, partition and offset.

A sink's micro-batch handler, on Spark's driver, wraps the batch in `batch(spec, batch_id)`
and calls `failed(record)` for each record it cannot take:

    with deadletter.batch(spec, batch_id) as errors:
        for record in records:
            try:
                ...convert or write it...
            except SomeError as exc:
                errors.failed(FailedRecord(topic, partition, offset, key, value, headers,
                                           "VALUE_CONVERTER", converter_class, exc))
        ...write the batch...

The dead letters are produced when the block ends without an error, after the sink wrote its
batch. They are exactly once as the sink's batch is: before the first is produced, the ends
of the queue's partitions are recorded with the batch id in the checkpoint (`deadletter.json`),
so a replayed batch reads what an earlier attempt put there since and produces only the rest.
With `errors.tolerance=none` the failed record's letter goes out before the task fails, as
Connect reports before it checks the tolerance.
"""

from __future__ import annotations

import logging
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from connect import ledger, metrics
from connect.errorconfig import ErrorPolicy
from connect.queryspec import QuerySpec
from connect.workerconfig import capped_replication
from kctl.spark.fetch import read_range
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import Offsets, TopicPartition
from kctl.spark.planning import OffsetRange
from kctl.spark.produce import Outbox
from kctl.spark.replay import digest

log = logging.getLogger(__name__)
HEADER_PREFIX = "__connect.errors."
STACKTRACE = HEADER_PREFIX + "exception.stacktrace"
LEDGER = "deadletter.json"
DLQ_PARTITIONS = 1  # DeadLetterQueueReporter creates a missing queue with one partition
TIMEOUT_S = 30.0
TASK = 0  # a connector's one task

Headers = list[tuple[str, bytes | None]]


@dataclass(frozen=True)
class FailedRecord:
    """A consumed record a sink could not take, and why (Connect's ProcessingContext)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    stage: str  # Connect's Stage: KEY_CONVERTER, VALUE_CONVERTER, HEADER_CONVERTER, TASK_PUT, ...
    class_name: str  # what ran when it failed: the converter's class, the sink task's
    error: BaseException


@dataclass(frozen=True)
class Letter:
    """A record for the dead letter queue."""

    key: bytes | None
    value: bytes | None
    headers: Headers = field(default_factory=list)


class ToleranceExceeded(RuntimeError):
    """A failed record with errors.tolerance=none: the task fails (Connect's ConnectException)."""


def exception_class(error: BaseException) -> str:
    """The error's class as Connect would name it: Connect's own for errors that stand for
    one (a ConversionError is a DataException), else the Python class."""
    named = getattr(error, "connect_class", None)
    return str(named) if named else f"{type(error).__module__}.{type(error).__qualname__}"


def context_headers(record: FailedRecord, connector: str) -> Headers:
    """DeadLetterQueueReporter's `__connect.errors.*` headers, UTF-8 strings."""
    values = [
        ("topic", record.topic),
        ("partition", str(record.partition)),
        ("offset", str(record.offset)),
        ("connector.name", connector),
        ("task.id", str(TASK)),
        ("stage", record.stage),
        ("class.name", record.class_name),
        ("exception.class.name", exception_class(record.error)),
        ("exception.message", str(record.error)),
        ("exception.stacktrace", "".join(traceback.format_exception(record.error))),
    ]
    return [(HEADER_PREFIX + name, value.encode()) for name, value in values]


def letter(record: FailedRecord, connector: str, context: bool) -> Letter:
    """The original key, value and headers, then the error's context when enabled."""
    extra = context_headers(record, connector) if context else []
    return Letter(record.key, record.value, [*record.headers, *extra])


def describe(record: FailedRecord, connector: str, with_record: bool) -> str:
    """LogReporter's message; with the record's coordinates when `with_record`."""
    text = (
        f"Error encountered in task {connector}-{TASK}. Executing stage '{record.stage}' "
        f"with class '{record.class_name}'"
    )
    if with_record:
        text += (
            f", where consumed record is {{topic='{record.topic}', partition={record.partition}, "
            f"offset={record.offset}}}"
        )
    return text + "."


class BatchErrors:
    """The errors of one micro-batch of a sink connector."""

    def __init__(self, spec: QuerySpec, batch_id: int) -> None:
        self._spec = spec
        self._batch = batch_id
        self.policy = ErrorPolicy.of(spec.config)
        self._letters: list[Letter] = []
        self._errors = 0
        self._logged = 0
        self._last: str | None = None

    def failed(self, record: FailedRecord) -> None:
        """Report a record the sink cannot take; it is skipped with errors.tolerance=all, else
        the task fails here (ToleranceExceeded, naming the record)."""
        self._errors += 1
        self._last = f"{exception_class(record.error)}: {record.error}"
        if self.policy.log:
            log.error(
                "%s", describe(record, self._spec.name, self.policy.log_messages), exc_info=record.error
            )
            self._logged += 1
        if self.policy.dlq_topic:
            self._letters.append(letter(record, self._spec.name, self.policy.context_headers))
        if self.policy.tolerate_all:
            return
        self.close(skipped=0)
        raise ToleranceExceeded(
            f"Tolerance exceeded in error handler. {describe(record, self._spec.name, True)} "
            f"Caused by {self._last}"
        ) from record.error

    def close(self, skipped: int) -> None:
        """Put the batch's letters in the queue, and count the batch's errors."""
        failures = 0
        try:
            if self._letters:
                queue = DeadLetterQueue(self._spec.client, self.policy, self._spec.checkpoint / LEDGER)
                queue.deliver(self._batch, self._letters)
        except Exception:
            failures = len(self._letters)
            raise
        finally:
            found = metrics.BatchErrors(
                self._errors, skipped, self._logged, len(self._letters), failures, self._last
            )
            metrics.REGISTRY.errors(self._spec.name, found)

    @property
    def skipped(self) -> int:
        """Records reported and not failing the task (errors.tolerance=all)."""
        return self._errors if self.policy.tolerate_all else 0


@contextmanager
def batch(spec: QuerySpec, batch_id: int) -> Iterator[BatchErrors]:
    """A sink's micro-batch: its dead letters go out when the block ends without an error."""
    errors = BatchErrors(spec, batch_id)
    yield errors
    errors.close(errors.skipped)


class DeadLetterQueue:
    """The queue topic of a connector, written once per record across replays of a batch."""

    def __init__(self, client: dict[str, str], policy: ErrorPolicy, ledger_path: Path) -> None:
        self._client = client
        self._topic = policy.dlq_topic
        self._replication = policy.dlq_replication_factor
        self._ledger = ledger_path

    def deliver(self, batch_id: int, letters: list[Letter]) -> None:
        ends = ClusterOffsets(self._client).latest(self._partitions())
        recorded = ledger.read(self._ledger)
        if recorded is not None and recorded["batch"] == batch_id:
            delivered = self._delivered(recorded["ends"], ends)
        else:
            ledger.write(self._ledger, {"batch": batch_id, "ends": [[tp, end] for tp, end in ends.items()]})
            delivered = Counter()
        with Outbox(self._client) as outbox:
            for found in letters:
                if delivered[identity(found)] > 0:
                    delivered[identity(found)] -= 1
                    continue
                outbox.send(self._topic, None, found.key, found.value, found.headers)

    def _partitions(self) -> list[TopicPartition]:
        """The queue's partitions; a missing queue is created as Connect creates it."""
        admin = AdminClient(dict(self._client))
        metadata = admin.list_topics(timeout=TIMEOUT_S)
        existing = metadata.topics.get(self._topic)
        if existing is not None and existing.error is None:
            return [TopicPartition(self._topic, p) for p in sorted(existing.partitions)]
        factor = capped_replication(self._replication, len(metadata.brokers))
        new = NewTopic(self._topic, DLQ_PARTITIONS, factor)
        try:
            admin.create_topics([new], operation_timeout=TIMEOUT_S)[self._topic].result(TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        return [TopicPartition(self._topic, p) for p in range(DLQ_PARTITIONS)]

    def _delivered(self, recorded: list[list], ends: Offsets) -> Counter[bytes]:
        """The letters an earlier attempt of the batch put in the queue, by content."""
        found: Counter[bytes] = Counter()
        for (topic, partition), start in recorded:
            end = ends.get(TopicPartition(topic, partition), start)
            for chunk in read_range(
                self._client, OffsetRange(topic, partition, start, end), False, TIMEOUT_S
            ):
                for record in chunk:
                    found[identity(Letter(record.key(), record.value(), record.headers() or []))] += 1
        return found


def identity(found: Letter) -> bytes:
    """A letter's content, but for its stack trace (which names the code's lines)."""
    return digest(found.key, found.value, [h for h in found.headers if h[0] != STACKTRACE])
