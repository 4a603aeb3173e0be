"""Waiting for a new connector's task to start, so `kctl connect create` can say whether the
connector runs: the worker answers POST /connectors at once and starts the task after (its
Spark application first, for the first connector), and a task that cannot reach its
database or cluster fails then, not when the config is accepted."""

from __future__ import annotations

import time
from typing import Any

from kctl.connect.client import ConnectClient, connector_path
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

POLL_S = 0.5
SETTLED = ("RUNNING", "FAILED", "PAUSED")
UNREACHABLE_MARKS = ("DatabaseUnreachable", "ClusterUnreachable")  # the worker's exception names


def started_task(client: ConnectClient, name: str, timeout_s: float) -> dict[str, Any]:
    """Task 0's status once it runs; KctlError with the task's own reason when it failed (exit 3
    when it cannot reach a database or cluster, else 1) or has not started within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        tasks = client.get(connector_path(name, "status"))["tasks"]
        task = tasks[0] if tasks else None
        if task is not None and task["state"] in SETTLED:
            break
        if time.monotonic() > deadline:
            raise KctlError(
                f"connector {name} was created, but its task has not started within {timeout_s:g}s "
                "(kctl connect status shows when it does)",
                ExitCode.UNREACHABLE,
            )
        time.sleep(POLL_S)
    if task["state"] == "FAILED":
        reason = _last_line(task.get("trace") or "")
        unreachable = any(mark in reason for mark in UNREACHABLE_MARKS)
        raise KctlError(
            f"connector {name} was created, but its task failed: {reason}",
            ExitCode.UNREACHABLE if unreachable else ExitCode.ERROR,
        )
    return task


def _last_line(trace: str) -> str:
    """A Python traceback's last line: the exception and its message."""
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no reason given"
