"""A JDBC source's committed offsets in Confluent's shapes, for `GET .../offsets` and
`.../topics`: partition `{"protocol": "1", "table": T}` (or `{"query": "query"}`), offset
`{"incrementing", "timestamp", "timestamp_nanos"}`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from connect.progress import committed_end

QUERY = "query"  # the offsets key of a custom query, as Confluent names its partition


def offsets(checkpoint: Path, config: Mapping[str, str]) -> list[dict[str, object]]:
    end = committed_end(checkpoint) or {}
    return [
        {
            "partition": {QUERY: QUERY} if _is_query(config) else {"protocol": "1", "table": source},
            "offset": offset,
        }
        for source, offset in sorted(end.items())
    ]


def topics(checkpoint: Path, config: Mapping[str, str]) -> list[str]:
    """The topics of the tables read so far."""
    prefix = config.get("topic.prefix", "").strip()
    end = committed_end(checkpoint) or {}
    return sorted({prefix if _is_query(config) else prefix + source for source in end})


def _is_query(config: Mapping[str, str]) -> bool:
    return bool(config.get("query", "").strip())
