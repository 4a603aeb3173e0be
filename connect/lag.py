"""How far a connector is behind its source, for `GET /connectors/{name}/metrics`. A
connector's module may have `lag(spec) -> int`, which measures it in the source's own unit:
a sink's records not yet committed, FileStreamSource's bytes of the file not yet read."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping

from connect.queryspec import QuerySpec
from kctl.spark.offsets import TopicPartition

log = logging.getLogger(__name__)
TIMEOUT_S = 5.0  # a metrics request waits no longer for the cluster


def of(runner: str, spec: QuerySpec) -> int | None:
    """The lag the connector's module measures; None without a `lag` function, or when it
    cannot tell now (the cluster does not answer)."""
    measure = getattr(importlib.import_module(runner), "lag", None)
    if measure is None:
        return None
    try:
        return int(measure(spec))
    except Exception as exc:  # a metric is not worth failing the request for
        log.warning("cannot measure the lag of connector %s: %s", spec.name, exc)
        return None


def records_behind(
    ends: Mapping[TopicPartition, int],
    starts: Mapping[TopicPartition, int],
    committed: Mapping[tuple[str, int], int],
) -> int:
    """A sink's records behind: per partition its end offset past the committed position, or
    past its log start where nothing is committed yet (or what is committed was deleted)."""
    total = 0
    for partition, end in ends.items():
        start = starts.get(partition, 0)
        total += max(0, end - max(committed.get(partition, start), start))
    return total


def bytes_behind(length: int, position: int) -> int:
    """A file source's bytes not yet read: the file's length past the committed position."""
    return max(0, length - position)
