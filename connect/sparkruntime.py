"""The worker's one Spark application, in which each connector runs as a Structured Streaming
query: FileStreamSource as the `connect-file` source into kctl's sink, FileStreamSink as
kctl's source into a file. Each query's progress is its checkpoint under the worker's
directory, so a connector started again (after a pause, a restart, a crash of the worker)
carries on where its last committed micro-batch ended.

Spark is slow to start and to stop a query, so one thread does all of it, in the order asked:
the REST API only queues what it wants and answers at once, as Connect's does.
"""

from __future__ import annotations

import importlib
import logging
import queue
import shutil
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from connect import plugins
from connect.metrics import QUERY_PREFIX
from connect.queryspec import QuerySpec
from connect.workerconfig import WorkerConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)
TRIGGER = "1 second"  # FileStreamSource's wait when there is nothing new
UNASSIGNED, RUNNING, FAILED = "UNASSIGNED", "RUNNING", "FAILED"
# Spark's own failures to start a Python worker (a fixed 10 s wait, too short on a busy
# machine): not the connector's fault, so its query starts again from its checkpoint
SPARK_FALTERED = ("Python worker failed to connect back", "Python worker exited unexpectedly")
MAX_RESTARTS = 3
STOP_S = 8.0  # within the 10 s `kctl connect down` waits before SIGKILL


@dataclass(frozen=True)
class TaskState:
    state: str
    trace: str | None = None


@dataclass(frozen=True)
class Job:
    name: str
    plugin: plugins.Plugin | None  # None: stop the connector's query
    config: Mapping[str, str]
    forget: bool = False  # and delete its checkpoint


class SparkRuntime:
    def __init__(
        self,
        master: str,
        kafka_options: Mapping[str, str],
        home: Path,
        worker: WorkerConfig,
        on_change: Callable[[str, TaskState], None],
    ) -> None:
        self._master = master
        self._kafka = dict(kafka_options)
        self._checkpoints = home / "checkpoints"
        self._worker = worker
        self._on_change = on_change
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._queries: dict[str, StreamingQuery] = {}
        self._running: dict[str, Job] = {}  # the job each query runs, to start it again
        self._restarts: dict[str, int] = {}  # Spark-faltered restarts since the connector's start
        self._states: dict[str, TaskState] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="spark-runtime", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def checkpoint(self, name: str) -> Path:
        return self._checkpoints / quote(name, safe="")

    def spec(self, name: str, config: Mapping[str, str]) -> QuerySpec:
        """What the connector's query is built from (and its lag measured by)."""
        return QuerySpec(name, config, self._kafka, self._worker.settings, self.checkpoint(name))

    def run(self, name: str, plugin: plugins.Plugin, config: Mapping[str, str]) -> None:
        """(Re)start the connector's query."""
        self._restarts.pop(name, None)
        self._set(name, TaskState(UNASSIGNED))
        self._jobs.put(Job(name, plugin, dict(config)))

    def halt(self, name: str, forget: bool = False) -> None:
        """Stop the connector's query; with `forget`, drop its progress too."""
        with self._lock:
            self._states.pop(name, None)
        self._jobs.put(Job(name, None, {}, forget))

    def state(self, name: str) -> TaskState:
        with self._lock:
            return self._states.get(name, TaskState(UNASSIGNED))

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=STOP_S)

    def _set(self, name: str, state: TaskState) -> None:
        with self._lock:
            self._states[name] = state
        self._on_change(name, state)

    # -- the Spark thread ----------------------------------------------------------------
    def _serve(self) -> None:
        """Run the jobs in order; Spark starts with the first connector to run, so a worker
        without running connectors costs no JVM."""
        spark: SparkSession | None = None
        while True:
            try:
                job = self._jobs.get(timeout=0.5)
            except queue.Empty:
                self._watch()
                continue
            if job is None:
                break
            if spark is None and job.plugin is not None:
                try:
                    spark = self._session()
                except Exception:  # this connector fails with the reason; the next one tries again
                    log.exception("Spark did not start")
                    self._set(job.name, TaskState(FAILED, traceback.format_exc()))
                    continue
            self._apply(spark, job)
        for name in list(self._queries):
            self._stop(name)
        if spark is not None:
            spark.stop()

    def _session(self) -> SparkSession:
        from connect.progresslistener import ProgressListener
        from kctl.spark.session import spark_session

        spark = spark_session(self._master, app_name="kctl-connect")
        spark.streams.addListener(ProgressListener())
        return spark

    def _apply(self, spark: SparkSession | None, job: Job) -> None:
        self._stop(job.name)
        self._running.pop(job.name, None)
        if job.forget:
            shutil.rmtree(self.checkpoint(job.name), ignore_errors=True)
        if job.plugin is None or spark is None:
            return
        try:
            self._queries[job.name] = self._query(spark, job.name, job.plugin, job.config)
            self._running[job.name] = job
        except Exception:
            log.exception("connector %s did not start", job.name)
            self._set(job.name, TaskState(FAILED, traceback.format_exc()))
            return
        self._set(job.name, TaskState(RUNNING))

    def _stop(self, name: str) -> None:
        query = self._queries.pop(name, None)
        if query is not None:
            query.stop()

    def _watch(self) -> None:
        """A query that ended by itself failed: its connector's task is FAILED, unless Spark
        itself faltered (a Python worker that did not start in time on a busy machine), when
        the query starts again from its checkpoint, a few times at most."""
        for name, query in list(self._queries.items()):
            if not query.isActive:
                del self._queries[name]
                error = str(query.exception() or "the query stopped")
                restarts = self._restarts.get(name, 0)
                job = self._running.get(name)
                if job is not None and restarts < MAX_RESTARTS and any(m in error for m in SPARK_FALTERED):
                    log.warning("connector %s: Spark faltered, starting it again: %s", name, error)
                    self._restarts[name] = restarts + 1
                    self._jobs.put(job)
                    continue
                self._set(name, TaskState(FAILED, error))

    def _query(
        self, spark: SparkSession, name: str, plugin: plugins.Plugin, config: Mapping[str, str]
    ) -> StreamingQuery:
        spec = self.spec(name, config)
        stream = importlib.import_module(plugin.runner).stream(spark, spec)
        return (
            stream.option("checkpointLocation", str(spec.checkpoint))
            .queryName(QUERY_PREFIX + name)
            .trigger(processingTime=TRIGGER)
            .start()
        )
