"""A connector's query that Spark itself failed (a Python worker that did not connect back in
Spark's fixed 10 s on a busy machine) starts again from its checkpoint, a few times at most;
a query that failed for its own reason makes the task FAILED at once. The queries are fakes
of the two things the runtime asks of a StreamingQuery."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from connect import plugins
from connect.sparkruntime import FAILED, MAX_RESTARTS, UNASSIGNED, Job, SparkRuntime, TaskState
from connect.workerconfig import WorkerConfig

pytestmark = pytest.mark.unit
FALTERED = "[STREAM_FAILED] Query terminated with exception: Python worker failed to connect back."


@dataclass
class EndedQuery:
    error: str

    isActive = False

    def exception(self) -> str:
        return self.error


def _runtime(tmp_path, changes: list[tuple[str, TaskState]]) -> SparkRuntime:
    return SparkRuntime("local[1]", {}, tmp_path, WorkerConfig(), lambda n, s: changes.append((n, s)))


def _started(runtime: SparkRuntime, error: str) -> Job:
    """As if the Spark thread had started the connector's query, which has now ended."""
    job = Job("copy", plugins.FILE_SINK, {"file": "x", "topics": "t"})
    runtime._running["copy"] = job
    runtime._queries["copy"] = EndedQuery(error)  # type: ignore[assignment]
    return job


def test_a_query_spark_failed_starts_again_a_few_times_then_fails(tmp_path):
    changes: list[tuple[str, TaskState]] = []
    runtime = _runtime(tmp_path, changes)
    for _ in range(MAX_RESTARTS):
        job = _started(runtime, FALTERED)
        runtime._watch()
        assert runtime._jobs.get_nowait() == job and changes == []
    _started(runtime, FALTERED)
    runtime._watch()
    assert changes == [("copy", TaskState(FAILED, FALTERED))]


def test_a_query_that_failed_for_its_own_reason_fails_the_task_at_once(tmp_path):
    changes: list[tuple[str, TaskState]] = []
    runtime = _runtime(tmp_path, changes)
    _started(runtime, "ConversionError: not JSON")
    runtime._watch()
    assert changes == [("copy", TaskState(FAILED, "ConversionError: not JSON"))] and runtime._jobs.empty()


def test_starting_a_connector_again_gives_it_its_restarts_back(tmp_path):
    runtime = _runtime(tmp_path, [])
    runtime._restarts["copy"] = MAX_RESTARTS
    runtime.run("copy", plugins.FILE_SINK, {"file": "x", "topics": "t"})
    assert "copy" not in runtime._restarts and runtime.state("copy") == TaskState(UNASSIGNED)
