"""The anomalies of a `kctl verify` history, to mark on a `kctl report` timeline.

A history is JSON lines, each with a "type" (see `kctl verify`'s docs): a "meta" line (the
topic, and the wall-clock moment the run "started", ISO 8601) and then operations whose "time"
is seconds since that start. Read here are the faults its nemesis injected ("fault" lines,
"phase" start and end, with the "kind" and "broker"), which a watch sees only once they show
(a pause shorter than broker.session.timeout.ms never does), and the anomalies:

- "anomaly" lines, wherever a history holds them: "anomaly" (or "check") names it, with
  "topic"/"partition" when it concerns one partition (else it is marked on every panel);
- the acknowledged writes the final read did not return: an "ack" of a value at
  partition/offset, and the "final" line saying the final read reached the end of that
  partition, but no "poll" of the process "final" returned the value. These are Jepsen's lost
  writes, marked at the moment they were acknowledged, acknowledgements less than
  LOST_GAP_S apart as one mark with their count.

The start is given to the second, so marks land within a second of their moment. Every other
line is skipped, so histories can grow new kinds of lines without breaking reports.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

MAX_LINE_CHARS = 4 * 1024 * 1024
MAX_LINES = 20_000_000
EPOCH_SECONDS = 1e9  # a "time" above this is seconds since 1970, not since the run started
LOST_GAP_S = 1.0
FINAL = "final"  # the process name of the final read


@dataclass(frozen=True)
class Injected:
    """A fault the nemesis of `kctl verify` injected: `kind` (kill, pause, kill-controller,
    throttle) on `broker`, from `start` to `end` (seconds since 1970)."""

    kind: str
    broker: int
    start: float
    end: float


@dataclass(frozen=True)
class Anomaly:
    time: float  # seconds since 1970
    kind: str
    topic: str | None = None
    partition: int | None = None
    detail: str = ""
    count: int = 1

    def concerns(self, topic: str, partition: int) -> bool:
        return (self.topic is None or self.topic == topic) and (
            self.partition is None or self.partition == partition
        )

    @property
    def label(self) -> str:
        return self.kind if self.count == 1 else f"{self.kind} x{self.count}"


@dataclass
class Findings:
    """What a history adds to a timeline."""

    anomalies: list[Anomaly] = field(default_factory=list)
    injected: list[Injected] = field(default_factory=list)


class _Reader:
    """What the lines say, as they are read."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.topic: str | None = None
        self.explicit: list[dict] = []
        self.acks: dict[str, tuple[float, int, int]] = {}  # value -> (time, partition, offset)
        self.final_values: set[str] = set()
        self.reached: set[int] = set()
        self.faults: list[tuple[str, float, str, int]] = []  # (phase, time, kind, broker)
        self.last = 0.0  # the latest time of any line

    def add(self, doc: dict) -> None:
        kind = doc.get("type") or doc.get("kind")
        if kind == "meta":
            self.started = _epoch(doc.get("started"))
            self.topic = doc.get("topic") if isinstance(doc.get("topic"), str) else None
        elif kind == "anomaly":
            self.explicit.append(doc)
        elif kind == "ack" and isinstance(doc.get("time"), int | float):
            self.acks[str(doc.get("value"))] = (float(doc["time"]), int(doc["partition"]), int(doc["offset"]))
        elif kind == "poll" and doc.get("process") == FINAL:
            self.final_values.update(str(r[2]) for r in doc.get("records") or [])
        elif kind == "final":
            self.reached = {int(p) for p, r in (doc.get("reached") or {}).items() if r}
        elif kind == "fault" and isinstance(doc.get("time"), int | float):
            self.faults.append(
                (str(doc.get("phase")), float(doc["time"]), str(doc["kind"]), int(doc["broker"]))
            )

    def injected(self, end: float) -> list[Injected]:
        """Each fault from its start line to its end line (or `end`, seconds since the start,
        for one a cut history never healed)."""
        if self.started is None:
            return []
        started: dict[tuple[str, int], float] = {}
        found = []
        for phase, t, kind, broker in sorted(self.faults, key=lambda f: f[1]):
            if phase == "start":
                started.setdefault((kind, broker), t)
            elif phase == "end" and (kind, broker) in started:
                found.append(
                    Injected(kind, broker, self.started + started.pop((kind, broker)), self.started + t)
                )
        found += [Injected(k, b, self.started + t, self.started + end) for (k, b), t in started.items()]
        return sorted(found, key=lambda f: f.start)

    def anomalies(self) -> list[Anomaly]:
        found = [a for a in (self._explicit(doc) for doc in self.explicit) if a is not None]
        return sorted(found + self._lost_writes(), key=lambda a: a.time)

    def _moment(self, value: object) -> float | None:
        if not isinstance(value, int | float):
            return None
        if value > EPOCH_SECONDS:
            return float(value)
        return None if self.started is None else self.started + value

    def _explicit(self, doc: dict) -> Anomaly | None:
        moment = self._moment(doc.get("time"))
        if moment is None:
            return None
        partition = doc.get("partition")
        topic = doc.get("topic") if isinstance(doc.get("topic"), str) else None
        return Anomaly(
            moment,
            str(doc.get("anomaly") or doc.get("check") or "anomaly"),
            topic or (self.topic if isinstance(partition, int) else None),
            partition if isinstance(partition, int) else None,
            str(doc.get("detail") or doc.get("message") or ""),
        )

    def _lost_writes(self) -> list[Anomaly]:
        if self.started is None:
            return []
        lost: dict[int, list[tuple[float, int, str]]] = defaultdict(list)
        for value, (t, partition, offset) in self.acks.items():
            if partition in self.reached and value not in self.final_values:
                lost[partition].append((t, offset, value))
        marks = []
        for partition, writes in sorted(lost.items()):
            runs: list[list[tuple[float, int, str]]] = []
            for write in sorted(writes):
                if runs and write[0] - runs[-1][-1][0] < LOST_GAP_S:
                    runs[-1].append(write)
                else:
                    runs.append([write])
            for run in runs:
                offsets = sorted(o for _, o, _ in run)
                marks.append(
                    Anomaly(
                        self.started + run[0][0],
                        "lost-write",
                        self.topic,
                        partition,
                        f"acknowledged at offsets {offsets[0]}..{offsets[-1]}, not in the final read",
                        len(run),
                    )
                )
        return marks


def read(path: Path) -> Findings:
    """The anomalies and injected faults in the history at `path` (exit 4 if missing, 5 if
    unreadable)."""
    reader = _Reader()
    try:
        lines = path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise KctlError(f"no such history: {path}", ExitCode.NOT_FOUND) from None
    except OSError as exc:
        raise KctlError(f"cannot read {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    with lines:
        for number, line in enumerate(lines, 1):
            if len(line) > MAX_LINE_CHARS or number > MAX_LINES:
                raise KctlError(f"{path}:{number}: history too large to mark", ExitCode.INVALID_INPUT)
            try:
                doc = json.loads(line)
            except ValueError:
                continue  # blank, or cut short by a run that was killed
            if isinstance(doc, dict):
                try:
                    reader.add(doc)
                    if isinstance(doc.get("time"), int | float):
                        reader.last = max(reader.last, float(doc["time"]))
                except (KeyError, TypeError, ValueError, IndexError):
                    raise KctlError(
                        f"{path}:{number}: not a line of a `kctl verify` history", ExitCode.INVALID_INPUT
                    ) from None
    return Findings(reader.anomalies(), reader.injected(reader.last))


def _epoch(started: object) -> float | None:
    if not isinstance(started, str):
        return None
    try:
        return datetime.fromisoformat(started).timestamp()
    except ValueError:
        return None
