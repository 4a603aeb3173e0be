"""PostgresConnector's committed offset in Debezium's shape, for `GET .../offsets` and
`.../topics`: partition `{"server": topic.prefix}`, offset `{"lsn": N}` (and `"snapshot": true`
until the snapshot is read)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from connect.progress import committed_end


def offsets(checkpoint: Path, config: Mapping[str, str]) -> list[dict[str, object]]:
    end = committed_end(checkpoint)
    if end is None:
        return []
    offset = {key: value for key, value in end.items() if key in ("lsn", "snapshot")}
    return [{"partition": {"server": config["topic.prefix"].strip()}, "offset": offset}]


def topics(checkpoint: Path, config: Mapping[str, str]) -> list[str]:
    """The topics of the tables read so far (in the snapshot or a change)."""
    end = committed_end(checkpoint) or {}
    tables = end.get("tables") or []
    assert isinstance(tables, list)
    return sorted(f"{config['topic.prefix'].strip()}.{table}" for table in tables)
