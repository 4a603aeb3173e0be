"""What `kctl connect status` and `kctl watch` show of a connect worker's connectors: each
one's status (Kafka Connect's, from `GET /connectors?expand=status`) with kctl's metrics
(`GET /connectors/{name}/metrics`: records in and out, errors, dead letters, lag, last
error), as one document per connector and as one table."""

from __future__ import annotations

from typing import Any

from kctl.connect.client import ConnectClient, connector_path
from kctl.shell.console import Cell, Section

COLUMNS = ["connector", "type", "state", "tasks", "in", "out", "errors", "dead letters", "lag", "last error"]
ERROR_WIDTH = 80  # a row stays one line in the watch; `kctl connect describe` has the whole trace
_FLOW = {"sink": ("sink-record-read-total", "sink-record-send-total")}
_SOURCE_FLOW = ("source-record-poll-total", "source-record-write-total")


def fetch(client: ConnectClient, name: str | None = None) -> list[dict[str, Any]]:
    """Every connector's (or the named one's) status and metrics, by name."""
    if name is not None:
        statuses = {name: client.get(connector_path(name, "status"))}
    else:
        listed = client.get("/connectors?expand=status")
        statuses = {found: entry["status"] for found, entry in listed.items()}
    docs = []
    for found, status in sorted(statuses.items()):
        measured = client.get(connector_path(found, "metrics"))
        docs.append({**status, **{key: measured[key] for key in ("metrics", "lag", "last_error")}})
    return docs


def section(docs: list[dict[str, Any]], title: str | None = None) -> Section:
    return Section(title, COLUMNS, [_row(doc) for doc in docs])


def _row(doc: dict[str, Any]) -> list[Cell]:
    read, written = _FLOW.get(doc["type"], _SOURCE_FLOW)
    counts = doc["metrics"]
    tasks = ",".join(task["state"] for task in doc["tasks"]) or "-"
    return [
        doc["name"],
        doc["type"],
        doc["connector"]["state"],
        tasks,
        counts.get(read),
        counts.get(written),
        counts.get("total-record-errors"),
        counts.get("deadletterqueue-produce-requests"),
        doc.get("lag"),
        _last_error(doc),
    ]


def _last_error(doc: dict[str, Any]) -> str:
    """A failed task's reason, else the last error its task tolerated, on one line, cut."""
    traces = [task["trace"] for task in doc["tasks"] if task.get("trace")]
    line = _reason(traces[0]) if traces else doc.get("last_error") or "-"
    return line if len(line) <= ERROR_WIDTH else line[: ERROR_WIDTH - 3] + "..."


def _reason(trace: str) -> str:
    """The last line of a trace that is not a frame (Python's `  File ...`, the JVM's
    `\tat ...`): the error itself, in Python's tracebacks and Spark's."""
    lines = [line for line in trace.splitlines() if line.strip() and not line[0].isspace()]
    return lines[-1].strip() if lines else trace.strip()
