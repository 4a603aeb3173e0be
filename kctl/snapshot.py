"""One moment of a local cluster, read from what its brokers publish in the state directory.

No Kafka request is made: the brokers, the controller, every partition's leader, epochs and
ISR, and each replica's log end come from files, so the picture stays complete while brokers
are dead or paused (when a protocol client would wait or fail). The high watermark and log
start, the last stable offset and the open transactions are those the partition's leader
publishes; a replica's log end is what its own broker last published (a dead broker's is the
last it knew).
"""

from __future__ import annotations

import time

from brokerd.state import ClusterState, PartitionRecord

from kctl import brokerview
from kctl.errors import KctlError
from kctl.exit_codes import ExitCode

Status = dict[int, dict[tuple[str, int], dict]]


def take(state: ClusterState, topic: str | None = None) -> dict:
    """Brokers, controller and partitions of `topic` (default: every non-internal topic)."""
    records = state.topics()
    if topic is not None and topic not in records:
        raise KctlError(f"unknown topic {topic!r}", ExitCode.NOT_FOUND)
    names = [topic] if topic is not None else sorted(n for n in records if not n.startswith("__"))
    status = state.replica_status()
    return {
        "time": round(time.time(), 3),
        "cluster_id": state.cluster_id(),
        "controller": brokerview.controller_json(state.controller()),
        "brokers": [b.to_json() for b in brokerview.view(state)],
        "topics": [{"topic": name,
                    "partitions": [_partition(name, record, status)
                                   for _, record in sorted(records[name].partitions.items())]}
                   for name in names],
    }


def _partition(topic: str, record: PartitionRecord, status: Status) -> dict:
    p = record.partition
    led = (status.get(record.leader, {}).get((topic, p)) if record.leader >= 0 else None) or {}
    return {
        "partition": p, "leader": record.leader, "leader_epoch": record.leader_epoch,
        "partition_epoch": record.partition_epoch,
        "replicas": list(record.replicas), "isr": list(record.isr),
        "log_start_offset": led.get("log_start_offset"),
        "last_stable_offset": led.get("last_stable_offset"),  # absent: brokers without transactions
        "high_watermark": led.get("high_watermark"),
        "log_end_offsets": {str(b): status.get(b, {}).get((topic, p), {}).get("log_end_offset")
                            for b in record.replicas},
        "open_transactions": led.get("open_transactions"),
    }
