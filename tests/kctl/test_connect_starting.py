"""`kctl connect create` waits for the new connector's task: it returns once the task runs,
and a task that fails is one line with the task's own reason, exit 3 when it cannot reach its
database or cluster, else 1; a task that never starts is exit 3 after the timeout. The
worker is a fake of the client's one call."""

from __future__ import annotations

from typing import Any

import pytest

from kctl.connect import starting
from kctl.connect.starting import started_task
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

pytestmark = pytest.mark.unit

TRACE = 'Traceback (most recent call last):\n  File "x.py", line 1\n{}\n'


class FakeWorker:
    """GET /connectors/NAME/status answered from a script of task lists."""

    def __init__(self, *answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)

    def get(self, path: str) -> dict[str, Any]:
        assert path == "/connectors/in%2Fout/status"
        tasks = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return {"name": "in/out", "tasks": tasks}


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(starting, "POLL_S", 0.0)


def test_returns_the_task_once_it_runs():
    worker = FakeWorker([], [{"id": 0, "state": "UNASSIGNED"}], [{"id": 0, "state": "RUNNING"}])
    assert started_task(worker, "in/out", 5)["state"] == "RUNNING"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        (
            "connect.jdbc.urls.DatabaseUnreachable: cannot connect to sqlite:///x: no such file",
            ExitCode.UNREACHABLE,
        ),
        ("connect.converters.ConversionError: not JSON", ExitCode.ERROR),
    ],
)
def test_a_failed_task_is_one_line_with_its_reason(reason, code):
    worker = FakeWorker([{"id": 0, "state": "FAILED", "trace": TRACE.format(reason)}])
    with pytest.raises(KctlError) as failed:
        started_task(worker, "in/out", 5)  # type: ignore[arg-type]
    assert str(failed.value) == f"connector in/out was created, but its task failed: {reason}"
    assert failed.value.code == code


def test_a_task_that_never_starts_times_out_with_exit_3():
    with pytest.raises(KctlError) as late:
        started_task(FakeWorker([{"id": 0, "state": "UNASSIGNED"}]), "in/out", 0.01)  # type: ignore[arg-type]
    assert "has not started within 0.01s" in str(late.value) and late.value.code == ExitCode.UNREACHABLE
