"""Which offsets `kctl topic delete-records` cuts each partition at: from the command line, or
from a kafka-delete-records.sh offsets file, so a file written for Kafka works here too.
Offset -1 means "up to the high watermark", as in Kafka; kctl.kafka.topics sends the request.
"""

from __future__ import annotations

import json
from pathlib import Path

from kctl.kafka.client import ClusterMetadata, find_topic
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

Cuts = dict[tuple[str, int], int]
HIGH_WATERMARK = -1
FILE_FORMAT = '{"partitions":[{"topic":..,"partition":..,"offset":..}],"version":1}'


def parse_offset(text: str) -> int:
    """'N', or '-1' / 'end' for the high watermark (delete every record)."""
    if text.strip().lower() == "end":
        return HIGH_WATERMARK
    try:
        offset = int(text)
    except ValueError:
        raise KctlError(f"invalid --offset {text!r}: expected N, -1 or end", ExitCode.INVALID_INPUT) from None
    if offset < HIGH_WATERMARK:
        raise KctlError(
            f"invalid --offset {text!r}: offsets start at 0 (-1 or end: the high watermark)",
            ExitCode.INVALID_INPUT,
        )
    return offset


def read_offsets_file(path: Path) -> Cuts:
    """A kafka-delete-records.sh --offset-json-file: one offset per topic partition."""
    try:
        doc = json.loads(path.read_text())
        cuts = {(str(e["topic"]), int(e["partition"])): int(e["offset"]) for e in doc["partitions"]}
    except OSError as exc:
        raise KctlError(f"cannot read {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise KctlError(
            f"invalid offsets file {path}: expected {FILE_FORMAT} ({exc})", ExitCode.INVALID_INPUT
        ) from None
    if not cuts or min(cuts.values()) < HIGH_WATERMARK:
        raise KctlError(
            f"invalid offsets file {path}: give at least one partition, offsets >= -1", ExitCode.INVALID_INPUT
        )
    return cuts


def for_topic(metadata: ClusterMetadata, topic: str, partitions: list[int] | None, offset: int) -> Cuts:
    """The same offset for the given partitions of `topic`, or for all of them."""
    known = sorted(find_topic(metadata, topic).partitions)
    return {(topic, p): offset for p in (partitions or known)}
