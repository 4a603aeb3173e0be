"""One moment of a local cluster, read from what its brokers publish in the state directory.

No Kafka request is made: the brokers, the controller and every partition's leader and
replicas come from files, so the picture stays complete while brokers are dead or paused
(when a protocol client would wait or fail). Everything else about a partition is the one
moment its leader last published (every half second): the ISR, log start, last stable offset,
high watermark, open transactions and every replica's log end as the leader knows it (a
follower's last fetch offset). Taken from one moment, these never contradict each other: no
follower ahead of its leader, no high watermark above an in-sync replica's log end. Until the
leader of the current leader epoch has published, they are unknown (null). Truncations are the
last each replica's own broker made. Security events are the brokers' latest authentication
failures and authorization denials. Share partitions are what each one's leader last
published of it (KIP-932): records acquired, delivered again, released, rejected, archived at
the delivery count limit and returned by an expired acquisition lock so far, and what is in
flight.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kctl.cluster import brokerview, securityevents
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:
    from brokerd.metadata.registration import PartitionRegistration
    from brokerd.state.cluster_view import ClusterView

Status = dict[int, dict[tuple[str, int], dict]]


def take(state: ClusterView, topic: str | None = None) -> dict:
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
        "fenced_controller": state.fenced_controller(),
        "brokers": [b.to_json() for b in brokerview.view(state)],
        "network_faults": state.network_faults().to_json(),
        "security_events": securityevents.recent(state),
        "topics": [
            {
                "topic": name,
                "partitions": [
                    _partition(name, record, status) for _, record in sorted(records[name].partitions.items())
                ],
            }
            for name in names
        ],
        "share_partitions": share_partitions(state, records, set(names)),
    }


def share_partitions(state: ClusterView, records: Mapping, names: set[str]) -> list[dict]:
    """The share partitions of the `names` topics, each as its current leader published it
    (one published at an older leader epoch, or by a broker no longer leading, is left out)."""
    out = []
    for broker, entries in state.share_status().items():
        for entry in entries:
            topic = records.get(entry.get("topic"))
            record = topic.partitions.get(entry.get("partition")) if topic is not None else None
            if (
                entry.get("topic") in names
                and record is not None
                and record.leader == broker
                and record.leader_epoch == entry.get("leader_epoch")
            ):
                out.append(entry)
    return sorted(out, key=lambda e: (e["group"], e["topic"], e["partition"]))


def partitions(state: ClusterView, topic: str) -> list[dict]:
    """The partitions of `topic` as their leaders last published them ([] if unknown)."""
    record = state.topics().get(topic)
    if record is None:
        return []
    status = state.replica_status()
    return [_partition(topic, r, status) for _, r in sorted(record.partitions.items())]


def _partition(topic: str, record: PartitionRegistration, status: Status) -> dict:
    p = record.partition
    led = _leader_status(topic, record, status)
    view = led.get("leader_view", {})
    ends = view.get("log_end_offsets", {})
    return {
        "partition": p,
        "leader": record.leader,
        "leader_epoch": record.leader_epoch,
        "partition_epoch": record.partition_epoch,
        "replicas": list(record.replicas),
        "isr": view.get("isr", list(record.isr)),
        "log_start_offset": led.get("log_start_offset"),
        "last_stable_offset": led.get("last_stable_offset"),
        "high_watermark": led.get("high_watermark"),
        "log_end_offsets": {str(b): ends.get(str(b)) for b in record.replicas},
        "open_transactions": led.get("open_transactions"),
        "min_insync_replicas": view.get("min_insync_replicas"),
        "high_watermark_waiting_ms": view.get("high_watermark_waiting_ms"),
        "log_start_moved_by": view.get("log_start_moved_by"),
        "truncations": {
            str(b): status.get(b, {}).get((topic, p), {}).get("last_truncation") for b in record.replicas
        },
        "last_unclean_election": record.last_unclean_election,
        "last_leader_rebalance": record.last_leader_rebalance,
    }


def _leader_status(topic: str, record: PartitionRegistration, status: Status) -> dict:
    """The leader's status, only if published while leading the current leader epoch: any
    other is a moment from before the last election."""
    led = status.get(record.leader, {}).get((topic, record.partition)) if record.leader >= 0 else None
    if not led or "leader_view" not in led or led.get("leader_epoch") != record.leader_epoch:
        return {}
    return led
