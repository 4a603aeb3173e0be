"""Opening a partition directory: clean up, load segments, recover after a crash.

Follows Kafka's ``LogLoader``: leftovers of interrupted operations are
removed, and unless the previous run shut down cleanly every segment from
the recovery point on is re-validated batch by batch. The first bad batch
ends the log: its segment is cut there and every later segment is deleted,
because nothing after a hole can be trusted to be what was acknowledged.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from brokerd.storage.checkpoint import TEMP_SUFFIX, CheckpointFile, fsync_directory
from brokerd.storage.log_config import LogConfig
from brokerd.storage.log_segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    LogSegment,
)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
_LEFTOVER_SUFFIXES = (".deleted", ".cleaned", TEMP_SUFFIX)
_SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
_SEGMENT_FILE = re.compile(r"(\d{20})(" + "|".join(re.escape(s) for s in _SEGMENT_SUFFIXES) + ")")


def recovery_point_checkpoint(directory: Path) -> CheckpointFile:
    return CheckpointFile(directory / RECOVERY_POINT_CHECKPOINT)


def read_recovery_point(directory: Path) -> int:
    """The checkpointed recovery point, or 0 (recover everything) when there is none."""
    lines = recovery_point_checkpoint(directory).read()
    try:
        return int(lines[0][0]) if lines else 0
    except ValueError:
        return 0


def load_segments(directory: Path, config: LogConfig, now_ms: int) -> tuple[list[LogSegment], int]:
    """Open every segment of ``directory``, recovering as needed; return them and the recovery point.

    The last segment comes back active (preallocated for appends), the others
    trimmed. There is always at least one segment.
    """
    directory.mkdir(parents=True, exist_ok=True)
    _delete_leftovers(directory)
    clean = _consume_clean_shutdown_marker(directory)
    recovery_point = read_recovery_point(directory)
    segments = [LogSegment(directory, base, config, now_ms) for base in _segment_base_offsets(directory)]
    segments = _load_or_recover(segments, math.inf if clean else recovery_point)
    if not segments:
        segments = [LogSegment.create(directory, 0, config, config.segment_bytes, now_ms)]
    for segment in segments[:-1]:
        segment.on_become_inactive()
    segments[-1].activate(config.segment_bytes)
    log_end_offset = segments[-1].next_offset
    return segments, log_end_offset if clean else min(recovery_point, log_end_offset)


def _load_or_recover(segments: list[LogSegment], recover_from: float) -> list[LogSegment]:
    """Trust segments wholly before ``recover_from`` if their files look right; recover the rest.

    Returns the segments that survive: a recovery that had to cut a segment
    deletes all later ones, and empty segments other than the last are dropped.
    """
    for i, segment in enumerate(segments):
        later = segments[i + 1 :]
        end_bound = later[0].base_offset if later else math.inf
        if end_bound <= recover_from and segment.load():
            continue
        if segment.recover() and later:
            for dropped in later:
                dropped.delete()
            segments = segments[: i + 1]
            break
    survivors = []
    for segment in segments:
        if segment.size or segment is segments[-1]:
            survivors.append(segment)
        else:
            segment.delete()
    return survivors


def _segment_base_offsets(directory: Path) -> list[int]:
    """Base offsets of the ``.log`` files, deleting index files that lost their log."""
    logs, indexes = set(), []
    for path in directory.iterdir():
        match = _SEGMENT_FILE.fullmatch(path.name)
        if match is None:
            continue
        if match[2] == LOG_SUFFIX:
            logs.add(int(match[1]))
        else:
            indexes.append((int(match[1]), path))
    for base, path in indexes:
        if base not in logs:
            path.unlink()
    return sorted(logs)


def _delete_leftovers(directory: Path) -> None:
    for path in directory.iterdir():
        if path.suffix in _LEFTOVER_SUFFIXES:
            path.unlink()


def _consume_clean_shutdown_marker(directory: Path) -> bool:
    """Whether the last close was clean; the marker is removed so a crash from now on is noticed."""
    marker = directory / CLEAN_SHUTDOWN_FILE
    if not marker.exists():
        return False
    marker.unlink()
    fsync_directory(directory)
    return True
