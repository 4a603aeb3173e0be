"""The mirror connectors' progress in Connect's shapes (`GET /connectors/{name}/offsets` and
`/topics`), read from their Spark checkpoints: MirrorSource's is MM2's, partition
`{"cluster", "topic", "partition"}` and offset `{"offset"}` (the last record copied); the
checkpoint and heartbeat connectors have none of their own."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from connect.mirror.settings import SOURCE_KEYS, MirrorSettings
from connect.progress import sink_positions


def offsets(checkpoint: Path, config: Mapping[str, str]) -> list[dict[str, object]]:
    if not _is_source(config):
        return []
    alias = MirrorSettings.of(config, {}, SOURCE_KEYS).source_alias
    # the query reads with kctl's source, whose positions a sink connector's progress shows too
    return [
        {
            "partition": {"cluster": alias, "topic": topic, "partition": partition},
            "offset": {"offset": offset - 1},
        }
        for (topic, partition), offset in sorted(sink_positions(checkpoint).items())
        if offset > 0
    ]


def topics(checkpoint: Path, config: Mapping[str, str]) -> list[str]:
    """The remote topics written to."""
    if not _is_source(config):
        return []
    settings = MirrorSettings.of(config, {}, SOURCE_KEYS)
    rename = settings.policy.format_remote_topic
    return sorted({rename(settings.source_alias, topic) for topic, _ in sink_positions(checkpoint)})


def _is_source(config: Mapping[str, str]) -> bool:
    return config.get("connector.class", "").split(".")[-1] in ("MirrorSourceConnector", "MirrorSource")
