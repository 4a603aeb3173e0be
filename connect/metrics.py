"""Each connector's numbers since the worker started, in Kafka Connect's metric names: the
records its query read and wrote, from Spark's progress of each micro-batch (a listener sees
every one once, connect.progresslistener), and the errors its task met, counted by
connect.deadletter. Both run in this process (a sink's micro-batch handler runs on Spark's
driver), so one registry serves them and the REST API."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

QUERY_PREFIX = "connect-"  # a connector's query is named connect-NAME


@dataclass
class Counts:
    records: int = 0  # the input rows of its micro-batches
    record_errors: int = 0
    records_skipped: int = 0
    errors_logged: int = 0
    dlq_requests: int = 0
    dlq_failures: int = 0
    last_error: str | None = None
    last_error_ms: int = 0


@dataclass(frozen=True)
class BatchErrors:
    """What one micro-batch's errors add up to."""

    errors: int = 0
    skipped: int = 0
    logged: int = 0
    dlq_requests: int = 0
    dlq_failures: int = 0
    last_error: str | None = None


class Registry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, Counts] = {}

    def progress(self, query_name: str | None, rows: int) -> None:
        """A micro-batch of a connector's query read `rows` records."""
        if not query_name or not query_name.startswith(QUERY_PREFIX):
            return
        with self._lock:
            self._of(query_name.removeprefix(QUERY_PREFIX)).records += rows

    def errors(self, name: str, found: BatchErrors) -> None:
        with self._lock:
            counts = self._of(name)
            counts.record_errors += found.errors
            counts.records_skipped += found.skipped
            counts.errors_logged += found.logged
            counts.dlq_requests += found.dlq_requests
            counts.dlq_failures += found.dlq_failures
            if found.last_error is not None:
                counts.last_error = found.last_error
                counts.last_error_ms = int(time.time() * 1000)

    def forget(self, name: str) -> None:
        with self._lock:
            self._counts.pop(name, None)

    def counts(self, name: str) -> Counts:
        with self._lock:
            return Counts(**vars(self._of(name)))

    def _of(self, name: str) -> Counts:
        return self._counts.setdefault(name, Counts())


REGISTRY = Registry()


def document(name: str, kind: str, counts: Counts, lag: int | None) -> dict[str, object]:
    """`GET /connectors/{name}/metrics`: Connect's task metrics (sink-task-metrics or
    source-task-metrics, task-error-metrics), the lag and the last error."""
    if kind == "sink":
        flow = {
            "sink-record-read-total": counts.records,
            "sink-record-send-total": counts.records - counts.records_skipped,
        }
    else:
        flow = {"source-record-poll-total": counts.records, "source-record-write-total": counts.records}
    return {
        "name": name,
        "type": kind,
        "metrics": {
            **flow,
            "total-record-errors": counts.record_errors,
            "total-record-failures": counts.record_errors,
            "total-records-skipped": counts.records_skipped,
            "total-errors-logged": counts.errors_logged,
            "deadletterqueue-produce-requests": counts.dlq_requests,
            "deadletterqueue-produce-failures": counts.dlq_failures,
            "last-error-timestamp": counts.last_error_ms,
        },
        "lag": lag,
        "last_error": counts.last_error,
    }
