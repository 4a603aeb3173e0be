"""Delivery reports: for `kctl produce`, counting them, printing them as JSON lines when asked,
serving them while input is read, stopping a run the cluster has stopped acknowledging, and
the one line a failed delivery gets; for `kctl bench produce`, each record's latency."""

from __future__ import annotations

import json
import signal
import sys
import threading

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kctl.kafka.errors import exit_code_for
from kctl.shell.errors import KctlError

# Failures that say the cluster is not taking records: a record that waited out
# message.timeout.ms (librdkafka retries NOT_ENOUGH_REPLICAS until then), or the refusal
# itself when retries are off (-X retries=0).
STALLED = {
    KafkaError._MSG_TIMED_OUT,
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
}


def failure(error: KafkaError, timeout: float) -> KctlError:
    """The one line for a failed delivery; a record that timed out says it was not
    acknowledged within `timeout` (message.timeout.ms)."""
    timed_out = error.code() == KafkaError._MSG_TIMED_OUT
    within = f" (not acknowledged within {timeout:g}s)" if timed_out else ""
    return KctlError(f"delivery failed: {error.str()}{within}", exit_code_for(error))


class DeliveryStopped(KafkaException):
    """The first stalled delivery: records queued behind it would only wait out the same
    timeout, so the run stops here. `partition` is where the record was going."""

    def __init__(self, error: KafkaError, partition: int | None):
        super().__init__(error)
        self.partition = partition


class DeliveryTally:
    """librdkafka's delivery callback for `kctl produce`: counts and the first failure.

    The first stalled delivery (see STALLED) raises DeliveryStopped, once; through the
    DeliveryPoller that ends the run even while it waits for input."""

    def __init__(self, topic: str, json_reports: bool, stop_at_rejection: bool = False):
        self._lock = threading.Lock()  # failures are counted from the poller and the reader
        self.topic = topic
        self.delivered = 0
        self.failed = 0
        self.timed_out = 0  # of the failed: retried by librdkafka until message.timeout.ms
        self.first_error: KafkaError | None = None
        self.json_reports = json_reports
        self.stop_at_rejection = stop_at_rejection
        self.stopped = False

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.delivered += 1
        else:
            self._fail(error)
        if self.json_reports:
            self._report(message.partition(), None if error else message.offset(), error)
        if error is not None and error.code() in STALLED and not self.stopped:
            self.stopped = True
            raise DeliveryStopped(error, message.partition())

    def rejected(self, error: KafkaError) -> None:
        """A record librdkafka refused before sending (e.g. too large): it gets no callback.

        With `stop_at_rejection` (a transaction, which cannot commit without the record) it
        raises the error, ending the run."""
        self._fail(error)
        if self.json_reports:
            self._report(None, None, error)
        if self.stop_at_rejection:
            raise KafkaException(error)

    def _fail(self, error: KafkaError) -> None:
        with self._lock:
            self.failed += 1
            if error.code() == KafkaError._MSG_TIMED_OUT:
                self.timed_out += 1
            if self.first_error is None:
                self.first_error = error

    def _report(self, partition: int | None, offset: int | None, error: KafkaError | None) -> None:
        doc = {
            "topic": self.topic,
            "partition": partition,
            "offset": offset,
            "error": None if error is None else error.str(),
        }
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()

    def summary(self) -> str:
        """The run's summary: "N records produced to TOPIC, M failed", and how many of the
        failed timed out, since a refusal librdkafka retries (NOT_ENOUGH_REPLICAS) ends as a
        timeout; the error printed after it says why."""
        records = "record" if self.delivered == 1 else "records"
        text = f"{self.delivered} {records} produced to {self.topic}, {self.failed} failed"
        return f"{text} ({self.timed_out} timed out)" if self.timed_out else text


class LatencyRecorder:
    """Delivery callback keeping librdkafka's own produce()-to-ack latency of each record."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[KafkaError] = []

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            latency = message.latency()
            assert latency is not None  # librdkafka times every message it delivered
            self.latencies.append(latency)
        else:
            self.errors.append(error)


class DeliveryPoller:
    """Serves delivery callbacks from a thread while the main thread reads input.

    Reading stdin blocks for as long as the writer pauses (a person typing, a slow pipe);
    polling only between records would hold every delivery report back until more input came.
    An exception in a callback (e.g. stdout closed) or a fatal producer error (e.g. fenced by
    a newer transactional producer) stops the thread, interrupts the main thread with SIGINT
    (which may be blocked reading input) and is re-raised on exit in place of that interrupt.
    """

    def __init__(self, producer: Producer):
        self._producer = producer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kctl-delivery", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._producer.poll(0.1)
        except BaseException as exc:  # handed to the main thread in __exit__
            self._error = exc
            main = threading.main_thread().ident  # None only for a thread not started yet
            if not self._stop.is_set() and main is not None:
                signal.pthread_kill(main, signal.SIGINT)

    def __enter__(self) -> DeliveryPoller:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None and exc_info[0] in (None, KeyboardInterrupt):
            raise self._error
