"""The segment files of a topic's replicas, read straight from the local brokers' data directories.

Each broker keeps partition P of topic T in `brokers/<id>/data/T-P/`, one segment per base
offset: `<base:020d>.log` plus its `.index`, `.timeindex` and `.txnindex`, as Kafka does.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import TYPE_CHECKING

from brokerd.storage.record_batch import iter_batch_spans

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView

SUFFIXES = ("index", "timeindex", "txnindex")


def list_segments(state: ClusterView, topic: str, partition: int | None) -> list[dict]:
    """One row per segment of every replica of `topic` (or of one partition), in offset order."""
    pattern = re.compile(re.escape(topic) + r"-(\d+)")
    rows = []
    for broker_id in sorted(state.planned_brokers()):
        data = state.broker_dir(broker_id) / "data"
        for directory in sorted(data.glob(f"{topic}-*")) if data.is_dir() else []:
            match = pattern.fullmatch(directory.name)
            if match is None or (partition is not None and int(match.group(1)) != partition):
                continue
            rows += [
                _segment_row(int(match.group(1)), broker_id, log) for log in sorted(directory.glob("*.log"))
            ]
    return sorted(rows, key=lambda r: (r["partition"], r["broker"], r["base_offset"]))


def _segment_row(partition: int, broker_id: int, log: Path) -> dict:
    """One segment: its offsets, the bytes of batches in its .log, and each file's size.

    The active segment's files are preallocated (sparse) for mmap, so a file's size is not
    what it holds: `log_bytes` counts the complete batches, `*_file_bytes` are file sizes.
    An index that does not exist (no aborted transaction, no .txnindex) is null.
    """
    used, next_offset = _batches(log)
    row: dict[str, int | None] = {
        "partition": partition,
        "broker": broker_id,
        "base_offset": int(log.stem),
        "next_offset": next_offset,
        "log_bytes": used,
        "log_file_bytes": log.stat().st_size,
    }
    for suffix in SUFFIXES:
        index = log.with_suffix(f".{suffix}")
        row[f"{suffix}_file_bytes"] = index.stat().st_size if index.exists() else None
    return row


def _batches(log: Path) -> tuple[int, int]:
    """(bytes of complete record batches, offset after the last one) of a .log file."""
    base = int(log.stem)
    size = log.stat().st_size
    if size == 0:
        return 0, base
    with open(log, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        used, next_offset = 0, base
        for position, _, last_offset, span in iter_batch_spans(buf, 0, size):
            used, next_offset = position + span, last_offset + 1
    return used, next_offset
