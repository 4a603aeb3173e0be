"""The clients of a `kctl verify` run, each in its own thread, writing what they do to the history.

- producers: idempotent, acks=all, each writing unique values `p<i>-<seq>` round-robin over
  the partitions at its share of --rate; nothing retries above the client (as in Jepsen's
  "safe" mode), so a value is written at most once unless the cluster duplicates it;
- group members: consumers of one group, read_committed, that commit (synchronously) the
  positions of what a poll returned once they have "processed" it, so a commit never runs
  ahead of what the group was given;
- with transactions: transactional writers, each reading (read_committed) what the topic holds
  so far and then writing one value to each of several partitions in one transaction;
  every fourth transaction is aborted on purpose;
- the final read: after the workload stops and every fault is healed, a read_committed read of
  every partition from its start to its end.

Each thread paces itself (a deadline per write, no busy loop) and polls in batches, so the
history grows at the offered rate, not at whatever the machine could do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kctl.kafka import consumer as consumers
from kctl.kafka.client import Connection, Consumer, Producer, produce_waiting
from kctl.kafka.consumer import Message
from kctl.kafka.errors import KafkaError, KafkaException
from kctl.shell.errors import KctlError
from kctl.verify.history import FINAL, HistoryWriter

POLL_BATCH = 500
POLL_TIMEOUT_S = 0.2
MESSAGE_TIMEOUT_MS = 20000  # a record not acknowledged by then fails (indeterminately)
TXN_TIMEOUT_MS = 20000
TXN_PARTITIONS = 3  # partitions each transaction writes to (at most the topic's)
ABORT_EVERY = 4  # every fourth transaction is aborted on purpose
GROUP_SETTINGS = {"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}
CLOSE_TIMEOUT_S = 30.0
# How long stopping may take. librdkafka bounds a writer's last flush, commit or abort by
# CLOSE_TIMEOUT_S each (a transactional writer may need two: its transaction's end, then the
# flush), but a group member's synchronous commit and its close wait for the group coordinator
# without a timeout of their own. By three session timeouts the coordinator has evicted the
# member and librdkafka has given up on it many times over: one still stuck is left behind
# and reported, so the run goes on to the final read and its verdict instead of hanging.
WRITERS_STOP_TIMEOUT_S = 2 * CLOSE_TIMEOUT_S
GROUP_STOP_TIMEOUT_S = 3 * GROUP_SETTINGS["session.timeout.ms"] / 1000


@dataclass(frozen=True)
class Plan:
    """What the workload does: its topic, its clients and their pace."""

    topic: str
    partitions: int
    group: str
    producers: int
    consumers: int
    txn_writers: int
    rate: float  # values per second over all producers
    txn_rate: float  # transactions per second over all transactional writers
    acks: str = "all"  # "all": idempotent producers; "1": the leader alone, not idempotent


class Worker(threading.Thread):
    """A client thread that runs until stopped and keeps the first exception it met, which
    the run reports instead of a silently shorter history."""

    def __init__(self, name: str, stop: threading.Event):
        super().__init__(name=name, daemon=True)
        self.stop = stop
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.work()
        except BaseException as exc:  # reported by Workload.finish
            self.error = exc

    def work(self) -> None:
        raise NotImplementedError


class Pacer:
    """Deadlines at `rate` per second; waiting wakes early when the run stops."""

    def __init__(self, rate: float, stop: threading.Event):
        self.interval = 1.0 / rate
        self.next = time.monotonic()
        self.stop = stop

    def wait(self) -> bool:
        """False once the run is stopping."""
        self.next += self.interval
        delay = self.next - time.monotonic()
        if delay < -1.0:  # fell behind (a stalled client): do not burst to catch up
            self.next = time.monotonic()
        return not self.stop.wait(max(0.0, delay))


class ProducerWorker(Worker):
    def __init__(
        self, index: int, conn: Connection, plan: Plan, history: HistoryWriter, stop: threading.Event
    ):
        super().__init__(f"p{index}", stop)
        self.conn, self.plan, self.history = conn, plan, history

    def work(self) -> None:
        producer = self._producer()
        pacer = Pacer(self.plan.rate / self.plan.producers, self.stop)
        seq = 0
        report = _delivery(self.history, self.name, None)
        while pacer.wait():
            value = f"{self.name}-{seq}"
            partition = seq % self.plan.partitions
            self.history.write("send", process=self.name, value=value, partition=partition)
            try:
                produce_waiting(
                    producer, self.plan.topic, value=value.encode(), partition=partition, on_delivery=report
                )
                producer.poll(0)
            except KafkaException as exc:  # refused at once; a fatal error ends this producer
                error: KafkaError = exc.args[0]
                self.history.write("fail", process=self.name, value=value, error=error.str(), txn=None)
                if error.fatal():
                    producer.flush(CLOSE_TIMEOUT_S)  # its queued records fail, each in the history
                    producer = self._producer()
            seq += 1
        producer.flush(CLOSE_TIMEOUT_S)

    def _producer(self) -> Producer:
        idempotent = self.plan.acks == "all"
        return self.conn.producer(
            {
                "enable.idempotence": idempotent,
                "acks": self.plan.acks,
                "message.timeout.ms": MESSAGE_TIMEOUT_MS,
            }
        )


def _delivery(
    history: HistoryWriter, process: str, txn: str | None
) -> Callable[[KafkaError | None, Message], None]:
    """The delivery callback writing each ack or failure to the history."""

    def report(error: KafkaError | None, message: Message) -> None:
        value = (message.value() or b"").decode(errors="replace")
        if error is not None:
            history.write("fail", process=process, value=value, error=error.str(), txn=txn)
        else:
            history.write(
                "ack",
                process=process,
                value=value,
                partition=message.partition(),
                offset=message.offset(),
                txn=txn,
            )

    return report


class GroupMember(Worker):
    """A consumer of the group: poll, process (record), commit what the poll returned."""

    def __init__(
        self, index: int, conn: Connection, plan: Plan, history: HistoryWriter, stop: threading.Event
    ):
        super().__init__(f"c{index}", stop)
        self.conn, self.plan, self.history = conn, plan, history

    def work(self) -> None:
        consumer = self.conn.consumer(
            {
                "group.id": self.plan.group,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                **GROUP_SETTINGS,
            }
        )
        consumers.subscribe(
            consumer, self.plan.topic, self._on("assigned"), self._on("revoked"), self._on("lost")
        )
        try:
            while not self.stop.is_set():
                records = _poll(consumer, self.history, self.name, None)
                positions: dict[int, int] = {}
                for p, o, _ in records:
                    positions[p] = max(positions.get(p, 0), o + 1)
                if positions:
                    failed = consumers.commit(consumer, self.plan.topic, positions)
                    error = None if failed is None else failed[1]
                    offsets = {str(p): o for p, o in positions.items()}
                    self.history.write("commit", process=self.name, offsets=offsets, error=error)
        finally:
            consumer.close()

    def _on(self, how: str) -> Callable[[list[int]], None]:
        return lambda partitions: self.history.write(
            "assign", process=self.name, how=how, partitions=partitions
        )


def _poll(
    consumer: Consumer, history: HistoryWriter, process: str, txn: str | None
) -> list[tuple[int, int, str]]:
    """One poll: its records written to the history as one line (errors are librdkafka's to
    retry; a partition's end is no record)."""
    batch = consumer.consume(num_messages=POLL_BATCH, timeout=POLL_TIMEOUT_S)
    records = [_record(m) for m in batch if m.error() is None]
    if records:
        history.write("poll", process=process, records=records, txn=txn)
    return records


def _record(m: Message) -> tuple[int, int, str]:
    """(partition, offset, value) of a consumed record (or of a partition-end event)."""
    partition, offset = m.partition(), m.offset()
    assert partition is not None and offset is not None  # librdkafka sets both on consumed messages
    return partition, offset, (m.value() or b"").decode(errors="replace")


class TxnWriter(Worker):
    """Read what is there, then write one value to each of several partitions atomically."""

    def __init__(
        self, index: int, conn: Connection, plan: Plan, history: HistoryWriter, stop: threading.Event
    ):
        super().__init__(f"t{index}", stop)
        self.conn, self.plan, self.history = conn, plan, history
        self.transactional_id = f"{plan.group}-{self.name}"

    def work(self) -> None:
        reader = self.conn.consumer({"isolation.level": "read_committed", "group.id": self.transactional_id})
        consumers.assign(reader, self.plan.topic, dict.fromkeys(range(self.plan.partitions), 0))
        producer = self._producer()
        pacer = Pacer(self.plan.txn_rate / self.plan.txn_writers, self.stop)
        n = 0
        try:
            while pacer.wait():
                txn = f"{self.name}-{n}"
                _poll(reader, self.history, self.name, txn)
                if not self._transaction(producer, txn, abort=n % ABORT_EVERY == ABORT_EVERY - 1, n=n):
                    producer = self._producer()  # the old one is unusable: fenced or fatal
                n += 1
        finally:
            reader.close()
            producer.flush(CLOSE_TIMEOUT_S)

    def _producer(self) -> Producer:
        """A producer registered with the transaction coordinator (which fences any older one
        with the same transactional.id and aborts what it left open). Registering is retried
        while the coordinator is moving (a fault), until the run stops."""
        while True:
            producer = self.conn.producer(
                {
                    "transactional.id": self.transactional_id,
                    "transaction.timeout.ms": TXN_TIMEOUT_MS,
                    "message.timeout.ms": MESSAGE_TIMEOUT_MS,
                }
            )
            try:
                producer.init_transactions(CLOSE_TIMEOUT_S)
                return producer
            except KafkaException as exc:
                if self.stop.is_set() or not (exc.args[0].retriable() or exc.args[0].fatal()):
                    raise

    def _transaction(self, producer: Producer, txn: str, abort: bool, n: int) -> bool:
        """One transaction; False when the producer must be replaced."""
        count = min(TXN_PARTITIONS, self.plan.partitions)
        report = _delivery(self.history, self.name, txn)
        started = self.history.now()
        try:
            producer.begin_transaction()
            for i in range(count):
                value = f"{txn}.{i}"
                partition = (n + i) % self.plan.partitions
                self.history.write("send", process=self.name, value=value, partition=partition, txn=txn)
                produce_waiting(
                    producer, self.plan.topic, value=value.encode(), partition=partition, on_delivery=report
                )
            producer.poll(0)
        except KafkaException as exc:
            return self._end(producer, txn, started, exc.args[0], "abort")
        return self._end(producer, txn, self.history.now(), None, "abort" if abort else "commit")

    def _end(self, producer: Producer, txn: str, asked: float, error: KafkaError | None, how: str) -> bool:
        """Commit or abort, and write the outcome: committed, aborted, or unknown when the
        producer cannot say (fatal errors: the coordinator decides, after the timeout)."""
        outcome, reason = "unknown", None if error is None else error.str()
        try:
            if how == "commit":
                outcome = self._commit(producer)
            else:
                producer.abort_transaction(CLOSE_TIMEOUT_S)
                outcome = "aborted"
        except KafkaException as exc:
            failure: KafkaError = exc.args[0]
            reason = failure.str()
            if failure.txn_requires_abort() and not failure.fatal():
                outcome = self._abort_after(producer)
        self.history.write(
            "txn",
            time=asked,
            end=self.history.now(),
            process=self.name,
            txn=txn,
            outcome=outcome,
            error=reason,
        )
        return outcome != "unknown"

    @staticmethod
    def _commit(producer: Producer) -> str:
        while True:
            try:
                producer.commit_transaction(CLOSE_TIMEOUT_S)
                return "committed"
            except KafkaException as exc:
                if not exc.args[0].retriable() or exc.args[0].txn_requires_abort():
                    raise

    @staticmethod
    def _abort_after(producer: Producer) -> str:
        try:
            producer.abort_transaction(CLOSE_TIMEOUT_S)
            return "aborted"
        except KafkaException:
            return "unknown"


class Workload:
    """Starts every client thread, stops them, then reads every partition back."""

    def __init__(self, conn: Connection, plan: Plan, history: HistoryWriter):
        self.conn, self.plan, self.history = conn, plan, history
        self.stop_writing = threading.Event()
        self.stop_reading = threading.Event()
        self.writers: list[Worker] = [
            ProducerWorker(i, conn, plan, history, self.stop_writing) for i in range(plan.producers)
        ]
        self.writers += [
            TxnWriter(i, conn, plan, history, self.stop_writing) for i in range(plan.txn_writers)
        ]
        self.readers: list[Worker] = [
            GroupMember(i, conn, plan, history, self.stop_reading) for i in range(plan.consumers)
        ]
        self.writers_stop_timeout_s = WRITERS_STOP_TIMEOUT_S
        self.group_stop_timeout_s = GROUP_STOP_TIMEOUT_S

    def start(self) -> None:
        for worker in self.readers + self.writers:
            worker.start()

    def stop(self) -> dict[str, BaseException]:
        """Stop writing (flushing what is in flight), then the group; each failed worker's
        error, and for each one that did not stop in time, that it was left running."""
        self.stop_writing.set()
        stuck = _join(self.writers, self.writers_stop_timeout_s)
        self.stop_reading.set()
        stuck |= _join(self.readers, self.group_stop_timeout_s)
        errors = {w.name: w.error for w in self.writers + self.readers if w.error is not None}
        return {**errors, **stuck}

    def final_read(self, timeout: float) -> dict[int, bool] | None:
        """Read every partition from its start to its end (read_committed: the last stable
        offset) as the process `final`, within `timeout`; partition -> whether the read got
        there. None when its client had not returned even CLOSE_TIMEOUT_S later: the read is
        left behind, and the history has no `final` line (what it did not reach is unseen)."""
        reader = FinalRead(self.conn, self.plan, self.history, timeout)
        reader.start()
        reader.join(timeout + CLOSE_TIMEOUT_S)
        if reader.error is not None:
            raise reader.error
        return None if reader.is_alive() else reader.reached


class FinalRead(Worker):
    """The final read, in a thread of its own so that a client call that never returns cannot
    hang the command: every wait in it shares one deadline."""

    def __init__(self, conn: Connection, plan: Plan, history: HistoryWriter, timeout: float):
        super().__init__(FINAL, threading.Event())
        self.conn, self.plan, self.history, self.timeout = conn, plan, history, timeout
        self.reached: dict[int, bool] = {}

    def work(self) -> None:
        deadline = time.monotonic() + self.timeout
        reader = self.conn.consumer(
            {
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "group.id": f"{self.plan.group}-final",
            }
        )
        try:
            starts, ends, unknown = self._watermarks(reader, deadline)
            reached = {p: p not in unknown and ends[p] <= starts[p] for p in ends}
            consumers.assign(reader, self.plan.topic, starts)
            while not all(r for p, r in reached.items() if p not in unknown) and time.monotonic() < deadline:
                batch = reader.consume(num_messages=POLL_BATCH, timeout=POLL_TIMEOUT_S)
                records = []
                for m in batch:
                    error = m.error()
                    if error is None:
                        records.append(_record(m))
                    elif error.code() == KafkaError._PARTITION_EOF:
                        p, end, _ = _record(m)
                        reached[p] = reached[p] or (p not in unknown and end >= ends[p])
                if records:
                    self.history.write("poll", process=FINAL, records=records)
            self.history.write(
                "final",
                process=FINAL,
                ends={str(p): e for p, e in ends.items()},
                reached={str(p): r for p, r in reached.items()},
            )
            self.reached = reached
        finally:
            reader.close()

    def _watermarks(
        self, reader: Consumer, deadline: float
    ) -> tuple[dict[int, int], dict[int, int], set[int]]:
        """Each partition's start and end, asked until the deadline (leaders may still be
        moving after the faults), and the partitions whose end is unknown by then: what the
        read returns of those is written, the rest is unseen."""
        starts, ends, unknown = {}, {}, set()
        for p in range(self.plan.partitions):
            patient = replace(self.conn, timeout=max(POLL_TIMEOUT_S, deadline - time.monotonic()))
            try:
                starts[p], ends[p] = consumers.watermarks(reader, patient, self.plan.topic, p)
            except KctlError:
                starts[p], ends[p] = 0, -1
                unknown.add(p)
        return starts, ends, unknown


def _join(workers: list[Worker], timeout: float) -> dict[str, BaseException]:
    """Wait for the workers to end, `timeout` in all; an error for each still running then
    (a daemon thread, which does not keep the command from exiting)."""
    deadline = time.monotonic() + timeout
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    return {w.name: left_behind(timeout) for w in workers if w.is_alive()}


def left_behind(timeout: float) -> KctlError:
    """The error of a client thread that had not ended `timeout` seconds after it was asked to."""
    return KctlError(f"did not end within {timeout:g}s (its Kafka client never returned); left behind")


def settings_for(plan: Plan) -> dict[str, Any]:
    """What the history's meta line says about the workload."""
    return {
        "topic": plan.topic,
        "partitions": plan.partitions,
        "group": plan.group,
        "producers": plan.producers,
        "consumers": plan.consumers,
        "txn_writers": plan.txn_writers,
        "rate": plan.rate,
        "acks": plan.acks,
        "idempotence": plan.acks == "all",
        "isolation": "read_committed",
    }
