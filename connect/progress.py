"""A connector's committed progress, read from its Spark checkpoint in Connect's offset shapes
(`GET /connectors/{name}/offsets`): Spark writes `offsets/<batch>` (a version line, a metadata
line, then each source's end offset as JSON) before a batch and `commits/<batch>` after it."""

from __future__ import annotations

import json
from pathlib import Path


def committed_end(checkpoint: Path) -> dict[str, object] | None:
    """The end offset of the source after the last committed batch; None before the first."""
    batches = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")]
    if not batches:
        return None
    lines = (checkpoint / "offsets" / str(max(batches))).read_text().splitlines()
    found: dict[str, object] = json.loads(lines[-1])
    return found


def source_offsets(checkpoint: Path, filename: str) -> list[dict[str, object]]:
    """FileStreamSource's partition and offset (`position` counts bytes here, not characters)."""
    end = committed_end(checkpoint)
    if end is None:
        return []
    return [{"partition": {"filename": filename}, "offset": {"position": end["position"]}}]


def sink_offsets(checkpoint: Path) -> list[dict[str, object]]:
    """A sink connector's next offset in each partition, as Connect shows a consumer's."""
    return [
        {
            "partition": {"kafka_topic": topic, "kafka_partition": partition},
            "offset": {"kafka_offset": offset},
        }
        for (topic, partition), offset in sorted(sink_positions(checkpoint).items())
    ]


def sink_topics(checkpoint: Path) -> list[str]:
    return sorted({topic for topic, _ in sink_positions(checkpoint)})


def sink_positions(checkpoint: Path) -> dict[tuple[str, int], int]:
    """kctl's source offsets, `{"topic": {"0": 23}}`, by topic and partition."""
    end = committed_end(checkpoint) or {}
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in end.items()
        if isinstance(partitions, dict)
        for partition, offset in partitions.items()
    }
