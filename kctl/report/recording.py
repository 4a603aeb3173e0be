"""A `kctl watch --record` file read back as timelines: what `kctl report` draws.

Each line of a recording is one moment of the watch (see kctl/watch/record.py). Here they
become, per partition, the series a chart needs (every replica's log end, the high
watermark, the last stable offset, the ISR size and min.insync.replicas over time, the
leader changes with their epochs), the faults as intervals per broker, and the changes the
watch narrated. A cut last line (a recorder killed mid-write) is skipped; any other line that
is not a moment is an error with its line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

MAX_MOMENTS = 500_000  # a day at the watch's default 0.5 s is 172,800
MAX_LINE_CHARS = 16 * 1024 * 1024
MIN_GAP_S = 5.0  # moments further apart are from two recordings appended to one file

# A fault's kind, as the watch names a broker's state, in words for a picture.
FAULT_WORDS = {
    "paused": "paused",
    "isolated": "isolated",
    "dead": "down",
    "shutting-down": "shutting down",
    "throttled": "throttled",
    "cut": "cut off",
    "loss": "losing packets",
}


@dataclass(frozen=True)
class LeaderChange:
    """A new leader or leader epoch, first seen at `time`."""

    time: float
    leader: int  # -1: no leader (offline)
    epoch: int
    previous_leader: int
    previous_epoch: int
    unclean: bool  # elected out of sync (the controller's last_unclean_election at this epoch)


@dataclass
class PartitionTimeline:
    """One partition over the recording; the lists run in step with `times` (None: unknown
    at that moment, e.g. before the new leader has published)."""

    topic: str
    partition: int
    times: list[float] = field(default_factory=list)
    high_watermark: list[int | None] = field(default_factory=list)
    last_stable_offset: list[int | None] = field(default_factory=list)
    log_end_offsets: dict[int, list[int | None]] = field(default_factory=dict)
    isr_size: list[int | None] = field(default_factory=list)
    min_insync_replicas: list[int | None] = field(default_factory=list)
    leaders: list[int] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)
    leader_changes: list[LeaderChange] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}/{self.partition}"

    def add(self, moment: float, doc: dict) -> None:
        if self.leaders and (doc["leader"], doc["leader_epoch"]) != (self.leaders[-1], self.epochs[-1]):
            unclean = doc.get("last_unclean_election") or {}
            self.leader_changes.append(
                LeaderChange(
                    moment,
                    doc["leader"],
                    doc["leader_epoch"],
                    self.leaders[-1],
                    self.epochs[-1],
                    unclean.get("leader_epoch") == doc["leader_epoch"],
                )
            )
        index = len(self.times)
        self.times.append(moment)
        self.leaders.append(doc["leader"])
        self.epochs.append(doc["leader_epoch"])
        self.high_watermark.append(doc.get("high_watermark"))
        self.last_stable_offset.append(doc.get("last_stable_offset"))
        self.isr_size.append(len(doc.get("isr") or []))
        self.min_insync_replicas.append(doc.get("min_insync_replicas"))
        ends = doc.get("log_end_offsets") or {}
        for replica in doc.get("replicas") or []:
            series = self.log_end_offsets.setdefault(int(replica), [None] * index)
            series.append(ends.get(str(replica)))
        for series in self.log_end_offsets.values():  # a replica moved away: unknown from now on
            if len(series) == index:
                series.append(None)

    def gap(self, moment: float) -> None:
        """Nothing known from `moment` to the next moment: the watch was not running (two
        recordings appended to one file), so the lines stop there instead of bridging it."""
        if not self.times:
            return
        self.times.append(moment)
        self.leaders.append(self.leaders[-1])
        self.epochs.append(self.epochs[-1])
        for series in (self.high_watermark, self.last_stable_offset, self.isr_size, self.min_insync_replicas):
            series.append(None)
        for ends in self.log_end_offsets.values():
            ends.append(None)


@dataclass(frozen=True)
class Fault:
    """A broker not serving normally from `start` to `end`: paused, dead, shutting-down or
    throttled (`detail`: the throttle rate)."""

    broker: int
    kind: str
    start: float
    end: float
    detail: str = ""


@dataclass
class Recording:
    """Everything `kctl report` draws from one recording file."""

    path: Path
    start: float
    end: float
    moments: int
    partitions: list[PartitionTimeline]
    faults: list[Fault]
    events: list[tuple[float, str]]


def read(path: Path) -> Recording:
    """The recording in `path`, or a KctlError (exit 4 if missing, 5 if not a recording)."""
    try:
        lines = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise KctlError(f"no such recording: {path}", ExitCode.NOT_FOUND) from None
    except OSError as exc:
        raise KctlError(f"cannot read {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    with lines:
        docs = list(_moments(path, lines))
    if not docs:
        raise KctlError(
            f"{path} holds no moments: record some with `kctl watch --record`", ExitCode.INVALID_INPUT
        )
    return build(path, docs)


def _moments(path: Path, lines: Iterable[str]) -> list[dict]:
    docs: list[dict] = []
    cut = None
    for number, line in enumerate(lines, 1):
        if cut is not None:
            raise KctlError(
                f"{path}:{cut}: not a JSON moment of `kctl watch --record`", ExitCode.INVALID_INPUT
            )
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS or len(docs) >= MAX_MOMENTS:
            raise KctlError(
                f"{path}:{number}: recording too large for a report (at most {MAX_MOMENTS} moments "
                f"of {MAX_LINE_CHARS} characters)",
                ExitCode.INVALID_INPUT,
            )
        try:
            doc = json.loads(line)
        except ValueError:
            cut = number  # only the last line may be cut short
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("time"), int | float) or "topics" not in doc:
            raise KctlError(f"{path}:{number}: not a moment of `kctl watch --record`", ExitCode.INVALID_INPUT)
        docs.append(doc)
    return docs


def build(path: Path, docs: list[dict]) -> Recording:
    """Timelines from moments, in time order."""
    docs = sorted(docs, key=lambda d: d["time"])
    timelines: dict[tuple[str, int], PartitionTimeline] = {}
    events: list[tuple[float, str]] = []
    open_faults: dict[tuple[int, str], tuple[float, str]] = {}
    faults: list[Fault] = []
    gap = _gap(docs)
    for previous, doc in zip([None, *docs], docs):
        moment = float(doc["time"])
        if previous is not None and moment - previous["time"] > gap:
            for timeline in timelines.values():
                timeline.gap(previous["time"] + gap / 10)
            faults += [
                Fault(k[0], k[1], t, previous["time"], detail) for k, (t, detail) in open_faults.items()
            ]
            open_faults.clear()
        for topic in doc["topics"]:
            for p in topic["partitions"]:
                name = (topic["topic"], int(p["partition"]))
                timelines.setdefault(name, PartitionTimeline(*name)).add(moment, p)
        events += [(moment, line) for line in doc.get("events") or []]
        now = {(f["broker"], f["fault"]): _detail(f) for f in doc.get("faults") or []}
        for key, (start, detail) in list(open_faults.items()):
            if key not in now:
                faults.append(Fault(key[0], key[1], start, moment, detail))
                del open_faults[key]
        for key, detail in now.items():
            open_faults.setdefault(key, (moment, detail))
    end = float(docs[-1]["time"])
    faults += [Fault(k[0], k[1], start, end, detail) for k, (start, detail) in open_faults.items()]
    return Recording(
        path,
        float(docs[0]["time"]),
        end,
        len(docs),
        [timelines[k] for k in sorted(timelines)],
        sorted(faults, key=lambda f: (f.start, f.broker)),
        events,
    )


def _gap(docs: list[dict]) -> float:
    """The longest pause between two moments of one recording session: ten watch intervals
    (the median time between moments), and at least MIN_GAP_S."""
    steps = sorted(b["time"] - a["time"] for a, b in zip(docs, docs[1:]))
    typical = steps[len(steps) // 2] if steps else 0.0
    return max(MIN_GAP_S, 10 * typical)


def _detail(fault: dict) -> str:
    if fault.get("from"):
        return "from " + ", ".join(fault["from"])
    if fault.get("percent") is not None:
        return f"{fault['percent']}%"
    rate = fault.get("bytes_per_s")
    return "" if rate is None else f"{rate} B/s"
