"""What `kctl topic describe` knows about a topic, as one JSON-ready document.

Leaders, replicas, ISR and watermarks come over the Kafka protocol, so they are right for any
cluster, and so does the last stable offset (the latest offset for read_committed readers).
When the cluster answering is the local one (same cluster id), the state directory adds what
no Kafka client can see: each replica's log end offset, the leader epoch and the open
transactions (producer id, epoch, first offset) the leader knows of.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from brokerd.state import ClusterState, TopicRecord
from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, OffsetSpec, ResourceType, TopicMetadata

from kctl import console
from kctl.client import Connection, fetch_metadata, find_topic, list_offsets


@dataclass(frozen=True)
class LocalView:
    topic: TopicRecord | None
    replica_status: dict[int, dict[tuple[str, int], dict]]


def describe(conn: Connection, name: str) -> dict:
    admin = conn.admin()
    metadata = fetch_metadata(admin, conn, name)
    topic = find_topic(metadata, name)
    ids = sorted(topic.partitions)
    parts = [(name, p) for p in ids]
    low = list_offsets(admin, conn, parts, OffsetSpec.earliest())
    # The last stable offset first: it never passes the high watermark, which only grows.
    stable = list_offsets(admin, conn, parts, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
    high = list_offsets(admin, conn, parts, OffsetSpec.latest())
    local = local_view(conn.bootstrap.cluster_dir, metadata.cluster_id, name)
    return {
        "topic": name,
        "partitions": [_partition(topic, p, (low[tp], stable[tp], high[tp]), local)
                       for p, tp in zip(ids, parts)],
        "configs": _configs(admin, conn, name),
    }


def local_view(cluster_dir: Path, cluster_id: str | None, name: str) -> LocalView | None:
    """The local state directory's view, only if it belongs to the cluster that answered."""
    state = ClusterState(cluster_dir)
    if cluster_id is None or not state.exists() or state.cluster_id() != cluster_id:
        return None
    return LocalView(state.topics().get(name), state.replica_status())


def _partition(topic: TopicMetadata, p: int, offsets: tuple[int | None, int | None, int | None],
               local: LocalView | None) -> dict:
    """`offsets`: log start, last stable offset, high watermark, as the leader answered."""
    meta = topic.partitions[p]
    low, stable, high = offsets
    doc = {
        "partition": p, "leader": meta.leader, "leader_epoch": None,
        "replicas": list(meta.replicas), "isr": list(meta.isrs),
        "log_start_offset": low, "last_stable_offset": stable, "high_watermark": high,
        "log_end_offsets": {}, "open_transactions": None,
    }
    if local is None:
        if meta.leader >= 0 and high is not None:
            doc["log_end_offsets"] = {str(meta.leader): high}
        return doc
    if local.topic is not None and p in local.topic.partitions:
        doc["leader_epoch"] = local.topic.partitions[p].leader_epoch
    for broker in meta.replicas:
        status = local.replica_status.get(broker, {}).get((topic.topic, p))
        doc["log_end_offsets"][str(broker)] = None if status is None else status["log_end_offset"]
    led = local.replica_status.get(meta.leader, {}).get((topic.topic, p), {})
    doc["open_transactions"] = led.get("open_transactions")  # absent: a broker without transactions
    return doc


def _configs(admin: AdminClient, conn: Connection, name: str) -> dict[str, dict] | None:
    """name -> {value, source}; None (with a warning) when the cluster cannot describe them."""
    resource = ConfigResource(ResourceType.TOPIC, name)
    future = admin.describe_configs([resource], request_timeout=conn.timeout)[resource]
    try:
        entries = future.result()
    except KafkaException as exc:
        console.warn(f"configs of {name!r} unavailable: {exc.args[0].str()}")
        return None
    return {k: {"value": e.value, "source": ConfigSource(e.source).name.lower()}
            for k, e in sorted(entries.items())}
