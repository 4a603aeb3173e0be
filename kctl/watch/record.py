"""`kctl watch --record FILE`: every moment the watch shows, appended to FILE as one JSON line.

A recording is what `kctl report` draws, and what a script can read with `jq`: each line is
one moment as `kctl watch --json` prints it (time, cluster id, controller, brokers with their
state and replication throttle, per topic every partition's leader, leader epoch, replicas,
ISR, log start, last stable offset, high watermark, each replica's log end, open transactions,
min.insync.replicas, the last truncations, the consumer groups), plus the faults in force
(brokers paused, dead, shutting down or throttled) and the changes narrated since the moment
before. Lines are flushed as they are written, so a recorder killed mid-run leaves every
moment but, at worst, a cut last line (which `kctl report` skips).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TextIO

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import duration_ms

FORMAT = "kctl-watch-moment/1"

_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h))+")


class Recorder:
    """Appends moments to a file, one JSON object a line, each flushed as written."""

    def __init__(self, path: Path):
        try:
            self._file: TextIO = path.open("a", encoding="utf-8")
        except OSError as exc:
            raise KctlError(f"cannot record to {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
        self.path = path
        self.moments = 0

    def write(self, snap: dict, changes: list[str]) -> None:
        self._file.write(json.dumps(moment(snap, changes), ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()
        self.moments += 1

    def close(self) -> None:
        self._file.close()


def moment(snap: dict, changes: list[str]) -> dict:
    """One line of a recording: the snapshot, the faults in force and the changes narrated."""
    faults_now = faults(snap["brokers"]) + network_faults(snap.get("network_faults") or {})
    return {"format": FORMAT, **snap, "faults": faults_now, "events": changes}


def network_faults(doc: dict) -> list[dict]:
    """The brokers a network fault is on at this moment: cut off from some peers (and whom
    from), or losing packets (and how many)."""
    cut_from: dict[int, set[str]] = {}
    for sender, receiver in doc.get("cuts", []):
        for broker, peer in ((sender, receiver), (receiver, sender)):
            if isinstance(broker, int):
                cut_from.setdefault(broker, set()).add(str(peer))
    for broker in doc.get("cut_from_quorum", []):
        cut_from.setdefault(broker, set()).add("controller")
    out = [{"broker": b, "fault": "cut", "from": sorted(peers)} for b, peers in sorted(cut_from.items())]
    out += [{"broker": int(b), "fault": "loss", "percent": p} for b, p in sorted(doc.get("loss", {}).items())]
    return out


def faults(brokers: list[dict]) -> list[dict]:
    """The brokers not serving normally at this moment: paused (SIGSTOP, or a lapsed lease),
    dead (killed or stopped), shutting down, or following under a replication throttle."""
    out: list[dict] = []
    for b in brokers:
        if b["state"] != "alive":
            out.append({"broker": b["id"], "fault": b["state"]})
        if b.get("replication_throttle_bytes_per_s") is not None:
            out.append(
                {
                    "broker": b["id"],
                    "fault": "throttled",
                    "bytes_per_s": b["replication_throttle_bytes_per_s"],
                }
            )
    return out


def seconds(text: str) -> float:
    """A --duration value: a bare number of seconds, or Go-style text (20s, 5m, 1h30m)."""
    try:
        value = float(text)
    except ValueError:
        if not _DURATION.fullmatch(text):
            raise KctlError(
                f"invalid duration {text!r}: give seconds (20) or a duration such as 20s, 5m, 1h30m",
                ExitCode.USAGE,
            ) from None
        value = duration_ms(text) / 1000
    if value <= 0:
        raise KctlError(f"invalid duration {text!r}: it must be above zero", ExitCode.USAGE)
    return value
