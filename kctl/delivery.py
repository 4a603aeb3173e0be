"""Counting delivery reports, and printing them as JSON lines when asked."""

from __future__ import annotations

import json
import sys
import threading

from confluent_kafka import KafkaError, Message, Producer


class DeliveryTally:
    """librdkafka's delivery callback for `kctl produce`: counts and the first failure."""

    def __init__(self, topic: str, json_reports: bool):
        self._lock = threading.Lock()  # failures are counted from the poller and the reader
        self.topic = topic
        self.delivered = 0
        self.failed = 0
        self.first_error: KafkaError | None = None
        self.json_reports = json_reports

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.delivered += 1
        else:
            self._fail(error)
        if self.json_reports:
            self._report(message.partition(), None if error else message.offset(), error)

    def rejected(self, error: KafkaError) -> None:
        """A record librdkafka refused before sending (e.g. too large): it gets no callback."""
        self._fail(error)
        if self.json_reports:
            self._report(None, None, error)

    def _fail(self, error: KafkaError) -> None:
        with self._lock:
            self.failed += 1
            if self.first_error is None:
                self.first_error = error

    def _report(self, partition: int | None, offset: int | None, error: KafkaError | None) -> None:
        doc = {"topic": self.topic, "partition": partition, "offset": offset,
               "error": None if error is None else error.str()}
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()

    def summary(self) -> str:
        records = "record" if self.delivered == 1 else "records"
        return f"{self.delivered} {records} produced to {self.topic}, {self.failed} failed"


class DeliveryPoller:
    """Serves delivery callbacks from a thread while the main thread reads input.

    Reading stdin blocks for as long as the writer pauses (a person typing, a slow pipe);
    polling only between records would hold every delivery report back until more input came.
    An exception in a callback (e.g. stdout closed) stops the thread and is re-raised on exit.
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

    def __enter__(self) -> "DeliveryPoller":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None and exc_info[0] is None:
            raise self._error
