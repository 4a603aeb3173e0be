"""The connectors' table `kctl connect status` prints and `kctl watch` shows beside the
cluster, built from the worker's status and metrics documents."""

import pytest

from kctl.connect import status
from kctl.watch import dashboard

pytestmark = pytest.mark.unit


def connector(name, kind, state, trace=None, lag=0, last_error=None, **counts):
    task = {"id": 0, "state": state, "worker_id": "127.0.0.1:8083", **({"trace": trace} if trace else {})}
    return {
        "name": name,
        "type": kind,
        "connector": {"state": "RUNNING", "worker_id": "127.0.0.1:8083"},
        "tasks": [task],
        "metrics": counts,
        "lag": lag,
        "last_error": last_error,
    }


SINK = connector(
    "file-out",
    "sink",
    "RUNNING",
    lag=0,
    last_error="org.apache.kafka.connect.errors.DataException: JsonConverter with schemas.enable requires "
    '"schema" and "payload" fields and may not contain additional fields.',
    **{
        "sink-record-read-total": 12,
        "sink-record-send-total": 9,
        "total-record-errors": 3,
        "deadletterqueue-produce-requests": 3,
    },
)
FAILED = connector(
    "strict",
    "sink",
    "FAILED",
    trace='Traceback (most recent call last):\n  File "x.py", line 1\n'
    "connect.deadletter.ToleranceExceeded: Tolerance exceeded in error handler.\n\tat org.apache.X",
    lag=None,
)
SOURCE = connector(
    "file-in", "source", "RUNNING", lag=40, **{"source-record-poll-total": 5, "source-record-write-total": 5}
)


def test_rows_say_state_flow_errors_lag_and_the_last_error():
    rows = status.section([SINK, FAILED, SOURCE]).rows
    assert rows[0][:9] == ["file-out", "sink", "RUNNING", "RUNNING", 12, 9, 3, 3, 0]
    assert rows[0][9].startswith("org.apache.kafka.connect.errors.DataException: JsonConverter")
    assert len(rows[0][9]) == status.ERROR_WIDTH and rows[0][9].endswith("...")
    assert rows[1][3] == "FAILED" and rows[1][8] is None
    assert rows[1][9] == "connect.deadletter.ToleranceExceeded: Tolerance exceeded in error handler."
    assert rows[2][4:10] == [5, 5, None, None, 40, "-"]


def test_the_watch_shows_the_workers_connectors_only_when_one_runs():
    snap = {"controller": None, "brokers": [], "topics": [], "groups": []}
    assert not [s for s in dashboard.build(snap, []) if (s.title or "").startswith("CONNECTORS")]
    snap["connect"] = {"url": "http://127.0.0.1:8083", "connectors": [SINK], "error": None}
    [section] = [s for s in dashboard.build(snap, []) if (s.title or "").startswith("CONNECTORS")]
    assert section.title == "CONNECTORS of the connect worker at http://127.0.0.1:8083"
    assert section.rows[0][0] == "file-out"
    snap["connect"] = {"url": "http://127.0.0.1:8083", "connectors": [], "error": "cannot reach it"}
    [section] = [s for s in dashboard.build(snap, []) if (s.title or "").startswith("CONNECTORS")]
    assert section.rows == [["cannot reach it"]]
