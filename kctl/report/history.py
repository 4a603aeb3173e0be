"""The anomalies of a `kctl verify` history, to mark on a `kctl report` timeline.

A history is JSON lines, one entry per operation, fault or finding, each with its time. Only
the findings are read here: an entry whose "type" (or "kind") is "anomaly", at its "time"
(seconds since the epoch; "time_ms" in milliseconds also works), named by its "anomaly",
"check" or "what" field, and placed on the panel of its "topic" and "partition" when it names
them (on every panel when it does not). Every other entry is skipped, so the history can
grow new kinds of entries without breaking reports.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

MAX_ANOMALIES = 10_000
MAX_LINE_CHARS = 16 * 1024 * 1024


@dataclass(frozen=True)
class Anomaly:
    time: float
    kind: str
    topic: str | None = None
    partition: int | None = None
    detail: str = ""

    def concerns(self, topic: str, partition: int) -> bool:
        return (self.topic is None or self.topic == topic) and (
            self.partition is None or self.partition == partition
        )


def read(path: Path) -> list[Anomaly]:
    """The anomalies in the history at `path` (exit 4 if missing)."""
    try:
        lines = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise KctlError(f"no such history: {path}", ExitCode.NOT_FOUND) from None
    except OSError as exc:
        raise KctlError(f"cannot read {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    found: list[Anomaly] = []
    with lines:
        for line in lines:
            if len(line) > MAX_LINE_CHARS:
                raise KctlError(f"{path}: a line over {MAX_LINE_CHARS} characters", ExitCode.INVALID_INPUT)
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # blank, or cut short by a run that was killed
            anomaly = parse(entry) if isinstance(entry, dict) else None
            if anomaly is not None:
                found.append(anomaly)
                if len(found) > MAX_ANOMALIES:
                    raise KctlError(f"{path}: more than {MAX_ANOMALIES} anomalies", ExitCode.INVALID_INPUT)
    return found


def parse(entry: dict) -> Anomaly | None:
    """An anomaly entry of a history, or None for any other entry."""
    if (entry.get("type") or entry.get("kind")) != "anomaly":
        return None
    moment = entry.get("time")
    if not isinstance(moment, int | float):
        millis = entry.get("time_ms")
        if not isinstance(millis, int | float):
            return None
        moment = millis / 1000
    kind = entry.get("anomaly") or entry.get("check") or entry.get("what") or "anomaly"
    partition = entry.get("partition")
    detail = entry.get("detail") or entry.get("message") or ""
    return Anomaly(
        float(moment),
        str(kind),
        entry.get("topic") if isinstance(entry.get("topic"), str) else None,
        partition if isinstance(partition, int) else None,
        str(detail),
    )
