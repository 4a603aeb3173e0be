"""The history of a `kctl verify` run: one JSON object per line, written as things happen.

Jepsen's word for it: every operation a client invoked and what came of it, with times, so
a checker can judge the run afterwards without trusting anything the clients concluded.
Times are seconds since the run started, from one monotonic clock (one process writes the
whole file), so "this poll returned before that commit was asked for" is a fact.

Lines (the `type` field says which; every line but `meta` has `time` and `process`):

- `meta`: the run: topic, partitions, isolation of the readers, whether faults were on;
- `send`: a producer handed a value to its client (`txn`: the transaction it belongs to);
- `ack`: the cluster acknowledged a value at `partition`/`offset` (null when the client was
  not told: an idempotent producer's retry the broker recognised as a duplicate);
- `fail`: the value's delivery failed with `error`. Without a transaction this is
  indeterminate, as in Jepsen's `:info`: a timed-out record may still have been written;
- `poll`: what one poll returned: `records` as `[partition, offset, value]` (`txn`: the
  transaction whose read this was, for the transactional writers' reads);
- `assign`: a group member's partitions were `assigned`, `revoked` or `lost` (`how`);
- `commit`: a group member committed `offsets` (partition -> next offset), `error` if refused;
- `txn`: a transaction ended: `outcome` committed, aborted or unknown; `time` is when the
  commit or abort was asked for, `end` when it returned;
- `fault`: the nemesis started (`phase` start) or healed (`phase` end) a fault: `kind`,
  `broker`;
- `final`: the final read from the beginning of every partition: where each partition ended
  (`ends`) and whether the read got there (`reached`). Its records are `poll` lines of the
  process `final`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

VERSION = 1
FINAL = "final"  # the process name of the final read
MAX_LINE_BYTES = 4 * 1024 * 1024  # one poll line of at most a few thousand records
MAX_RECORDS_PER_POLL = 100_000
OUTCOMES = ("committed", "aborted", "unknown")


@dataclass(frozen=True)
class Send:
    line: int
    time: float
    process: str
    value: str
    partition: int | None
    txn: str | None


@dataclass(frozen=True)
class Ack:
    line: int
    time: float
    process: str
    value: str
    partition: int
    offset: int | None  # None: librdkafka reported it delivered, offset unknown (a retried duplicate)
    txn: str | None


@dataclass(frozen=True)
class Fail:
    line: int
    time: float
    process: str
    value: str
    error: str
    txn: str | None


@dataclass(frozen=True)
class Read:
    """One record of a poll: (partition, offset, value), with the poll's time and process."""

    line: int
    time: float
    process: str
    partition: int
    offset: int
    value: str
    txn: str | None


@dataclass(frozen=True)
class Assignment:
    line: int
    time: float
    process: str
    how: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class Commit:
    line: int
    time: float
    process: str
    offsets: dict[int, int]
    error: str | None


@dataclass(frozen=True)
class TxnEnd:
    line: int
    time: float
    end: float
    process: str
    txn: str
    outcome: str
    error: str | None


@dataclass(frozen=True)
class Fault:
    line: int
    time: float
    phase: str
    kind: str
    broker: int | None
    error: str | None


@dataclass(frozen=True)
class FinalRead:
    line: int
    time: float
    ends: dict[int, int]
    reached: dict[int, bool]


@dataclass
class History:
    """A parsed history, each kind of line in file order (their `line` orders them across kinds)."""

    meta: dict[str, Any] = field(default_factory=dict)
    sends: list[Send] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    fails: list[Fail] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    txns: list[TxnEnd] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    final: FinalRead | None = None

    @property
    def idempotent(self) -> bool:
        """Whether the producers were idempotent (the default); without it Kafka allows
        duplicates and reordering from the client's own retries."""
        return bool(self.meta.get("idempotence", True))

    @property
    def read_committed(self) -> bool:
        """Whether the readers read with isolation.level=read_committed (the default)."""
        return self.meta.get("isolation", "read_committed") == "read_committed"


class HistoryWriter:
    """Appends history lines from any thread; each line is flushed as written, so a run that is
    cut short still leaves every operation it made so far."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._file: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self._started = time.monotonic()

    @classmethod
    def open(cls, path: Path) -> HistoryWriter:
        """A writer of a new history at `path`; a path that cannot be written is exit 5."""
        try:
            return cls(path)
        except OSError as exc:
            raise KctlError(f"cannot write history {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None

    def now(self) -> float:
        """Seconds since the run started, the clock of every line."""
        return round(time.monotonic() - self._started, 6)

    def write(self, line_type: str, /, **fields: Any) -> None:
        doc = {"type": line_type, "time": fields.pop("time", None), **fields}
        if doc["time"] is None:
            doc["time"] = self.now()
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
        with self._lock:
            self._file.write(text)
            self._file.flush()

    def meta(self, **fields: Any) -> None:
        with self._lock:
            doc = {"type": "meta", "version": VERSION, **fields}
            self._file.write(json.dumps(doc, separators=(",", ":")) + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read(path: Path) -> History:
    """Parse a history file; a line that is not a history line is exit 5 naming the line."""
    try:
        with open(path, "rb") as f:
            return parse(_lines(f))
    except OSError as exc:
        raise KctlError(f"cannot read history {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None


def _lines(f: IO[bytes]) -> Iterator[bytes]:
    while True:
        line = f.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise _bad(None, f"a line longer than {MAX_LINE_BYTES} bytes")
        yield line


def parse(lines: Iterable[bytes | str]) -> History:
    """A History from JSON lines (bytes or text); blank lines are skipped."""
    history = History()
    for number, raw in enumerate(lines, 1):
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
        if not text.strip():
            continue
        try:
            doc = json.loads(text)
            _add(history, number, doc)
        except (ValueError, KeyError, TypeError) as exc:
            raise _bad(number, str(exc) or type(exc).__name__) from None
    return history


def _bad(line: int | None, why: str) -> KctlError:
    where = f"line {line}: " if line is not None else ""
    return KctlError(f"not a kctl verify history: {where}{why}", ExitCode.INVALID_INPUT)


def _add(h: History, n: int, doc: dict[str, Any]) -> None:
    kind = doc["type"]
    if kind == "meta":
        h.meta = doc
        return
    t = float(doc["time"])
    process = str(doc.get("process", ""))
    txn = _opt_str(doc.get("txn"))
    if kind == "send":
        h.sends.append(Send(n, t, process, str(doc["value"]), _opt_int(doc.get("partition")), txn))
    elif kind == "ack":
        h.acks.append(
            Ack(n, t, process, str(doc["value"]), int(doc["partition"]), _opt_int(doc["offset"]), txn)
        )
    elif kind == "fail":
        h.fails.append(Fail(n, t, process, str(doc["value"]), str(doc.get("error")), txn))
    elif kind == "poll":
        records = doc["records"]
        if len(records) > MAX_RECORDS_PER_POLL:
            raise ValueError(f"a poll of more than {MAX_RECORDS_PER_POLL} records")
        h.reads.extend(Read(n, t, process, int(p), int(o), str(v), txn) for p, o, v in records)
    elif kind == "assign":
        partitions = tuple(int(p) for p in doc["partitions"])
        h.assignments.append(Assignment(n, t, process, str(doc["how"]), partitions))
    elif kind == "commit":
        offsets = {int(p): int(o) for p, o in doc["offsets"].items()}
        h.commits.append(Commit(n, t, process, offsets, _opt_str(doc.get("error"))))
    elif kind == "txn":
        outcome = str(doc["outcome"])
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown transaction outcome {outcome!r}")
        end = float(doc.get("end", t))
        h.txns.append(TxnEnd(n, t, end, process, str(doc["txn"]), outcome, _opt_str(doc.get("error"))))
    elif kind == "fault":
        broker = _opt_int(doc.get("broker"))
        h.faults.append(Fault(n, t, str(doc["phase"]), str(doc["kind"]), broker, _opt_str(doc.get("error"))))
    elif kind == "final":
        ends = {int(p): int(o) for p, o in doc["ends"].items()}
        reached = {int(p): bool(r) for p, r in doc["reached"].items()}
        h.final = FinalRead(n, t, ends, reached)
    else:
        raise ValueError(f"unknown line type {kind!r}")


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
