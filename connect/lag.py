"""How far a connector is behind its source, for `GET /connectors/{name}/metrics`. A
connector's module may have `lag(spec) -> int`, which measures it in the source's own unit:
FileStreamSource's bytes of the file not yet read, a JDBC source's rows not yet moved, a
mirror's records not yet copied; a sink without one is measured by its records not yet
committed (`sink_lag`)."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping

from connect import progress
from connect.queryspec import QuerySpec
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import TopicPartition
from kctl.spark.options import Subscription

log = logging.getLogger(__name__)
TIMEOUT_S = 5.0  # a metrics request waits no longer for the cluster


def of(runner: str, sink: bool, spec: QuerySpec) -> int | None:
    """The lag the connector's module measures (a sink's records behind, if it has no own
    measure); None when it has none or cannot tell now (the cluster does not answer)."""
    measure = getattr(importlib.import_module(runner), "lag", sink_lag if sink else None)
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


def sink_lag(spec: QuerySpec) -> int:
    """A sink's records behind: its topics' end offsets past its committed positions."""
    topics = tuple(t.strip() for t in spec.config.get("topics", "").split(",") if t.strip())
    wanted = Subscription(topics) if topics else Subscription(pattern=spec.config["topics.regex"])
    return subscription_lag(spec.client, wanted, spec)


def subscription_lag(client: Mapping[str, str], wanted: Subscription, spec: QuerySpec) -> int:
    """Records of the topics `wanted` on the cluster of `client` past the positions the
    connector's query (reading them with kctl's source) has committed."""
    cluster = ClusterOffsets(dict(client), timeout_s=TIMEOUT_S)
    partitions = cluster.partitions(wanted)
    committed = progress.sink_positions(spec.checkpoint)
    return records_behind(cluster.latest(partitions), cluster.earliest(partitions), committed)
