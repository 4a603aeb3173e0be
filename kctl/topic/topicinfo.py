"""What `kctl topic describe` knows about a topic, as one JSON-ready document.

Leaders, replicas, ISR and watermarks come over the Kafka protocol, so they are right for any
cluster, and so does the last stable offset (the latest offset for read_committed readers).
When the cluster answering is the local one (same cluster id), each partition is instead the
moment its leader last published in the state directory (kctl.cluster.snapshot), once that
moment is at least as recent as the protocol's answer: it adds what no Kafka client can see
(each replica's log end offset, the leader epoch, the open transactions) and keeps every
number from the same moment.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kctl.cluster import snapshot
from kctl.kafka import configs, offsets
from kctl.kafka.client import Connection, TopicMetadata, fetch_metadata, find_topic
from kctl.shell import console
from kctl.shell.errors import KctlError

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView

LEADER_MOMENT_WAIT_S = 2.0  # brokers publish every 0.5 s; a leader just elected takes a little longer
POLL_S = 0.1


def describe(conn: Connection, name: str) -> dict:
    metadata = fetch_metadata(conn.admin(), conn, name)
    topic = find_topic(metadata, name)
    ids = sorted(topic.partitions)
    parts = [(name, p) for p in ids]
    low = offsets.log_starts(conn, parts)
    # The last stable offset first: it never passes the high watermark, which only grows.
    stable = offsets.last_stable_offsets(conn, parts)
    high = offsets.high_watermarks(conn, parts)
    answered = [_partition(topic, p, (low[tp], stable[tp], high[tp])) for p, tp in zip(ids, parts)]
    state = _local_state(conn, metadata.cluster_id)
    return {
        "topic": name,
        "partitions": answered if state is None else _leader_moments(state, name, answered),
        "configs": _configs(conn, name),
    }


def _local_state(conn: Connection, cluster_id: str | None) -> ClusterView | None:
    """The local state directory, only if it belongs to the cluster that answered."""
    from brokerd.state.cluster_view import open_view  # when a command runs, not for --help

    state = open_view(conn.bootstrap.cluster_dir)
    if cluster_id is None or not state.exists() or state.cluster_id() != cluster_id:
        return None
    return state


def _partition(topic: TopicMetadata, p: int, offsets: tuple[int | None, int | None, int | None]) -> dict:
    """`offsets`: log start, last stable offset, high watermark, as the leader answered; of
    the log ends, only the leader's is known, and only as far as its high watermark."""
    meta = topic.partitions[p]
    low, stable, high = offsets
    return {
        "partition": p,
        "leader": meta.leader,
        "leader_epoch": None,
        "replicas": list(meta.replicas),
        "isr": list(meta.isrs),
        "log_start_offset": low,
        "last_stable_offset": stable,
        "high_watermark": high,
        "log_end_offsets": {str(meta.leader): high} if meta.leader >= 0 and high is not None else {},
        "open_transactions": None,
    }


def _leader_moments(state: ClusterView, name: str, answered: list[dict]) -> list[dict]:
    """Each partition as its leader published it, waiting (briefly) for a moment no older than
    the protocol's answer; a partition whose leader has not published one keeps the answer,
    without log ends."""
    deadline = time.monotonic() + LEADER_MOMENT_WAIT_S
    while True:
        published = {p["partition"]: p for p in snapshot.partitions(state, name)}
        if all(_recent(published.get(a["partition"]), a) for a in answered) or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    out = []
    for a in answered:
        p = published.get(a["partition"])
        if p is not None and p["high_watermark"] is not None:
            out.append({k: p[k] for k in a})
        else:
            out.append(
                {
                    **a,
                    "leader_epoch": None if p is None else p["leader_epoch"],
                    "log_end_offsets": {str(b): None for b in a["replicas"]},
                }
            )
    return out


def _recent(published: dict | None, answered: dict) -> bool:
    if answered["high_watermark"] is None:
        return True
    return (
        published is not None
        and published["high_watermark"] is not None
        and published["high_watermark"] >= answered["high_watermark"]
        and published["log_start_offset"] >= (answered["log_start_offset"] or 0)
    )


def _configs(conn: Connection, name: str) -> dict[str, dict] | None:
    """name -> {value, source}; None (with a warning) when the cluster cannot describe them."""
    try:
        return configs.topic_configs(conn, name)
    except KctlError as exc:
        console.warn(exc.message)
        return None
