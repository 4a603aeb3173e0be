"""The shared state directory: kctl's stand-in for ZooKeeper / the KRaft metadata quorum.

Every broker of a local cluster and the `kctl` CLI read the cluster's state from here, and
this package is the only code that opens these files (ClusterState, one module per job).
kctl sees less of it: it reads through ClusterView (cluster_view) and writes only the broker
plan (cluster_setup, cluster_plan) and injected faults (faults).
Layout of ``<cluster>/state/``:

    cluster.json            cluster_plan: the cluster id and the planned brokers (id -> port)
    metadata/               metadata_store, topics, partition_changes: the metadata log
                            (brokerd.metadata): topics, their configs and partitions, dynamic
                            broker configs by broker id and "<default>"
    controller.json         controller_epoch: the active controller's broker id and epoch
    fenced-controller.json  controller_epoch: the last controller found stale (a zombie)
    brokers/<id>.json       broker_registrations: a broker's registration (host, port, pid,
                            listeners)
    brokers/<id>.lock       broker_registrations: held (flock) by the live broker process,
                            released by the OS when it dies
    brokers/<id>.heartbeat  broker_registrations: the broker's lease, touched several times
                            per session timeout
    topic_requests.json     topic_requests: topics other brokers were asked to auto-create
    producer_ids.json       producer_ids: the next free block of producer ids
    replicas/<id>.json      replica_status: every replica a broker hosts, at one moment
    faults/<id>.json        faults: what kctl injects into a running broker (a throttle)
    faults/network.json     faults: the network faults in force, and which brokers are cut off
                            from the quorum (each broker reads whether it is)
    scram-credentials.json, acls.json, client-quotas.json, security-events/<id>.json
                            security: SCRAM credentials, ACLs, client quotas, security events
    .lock                   directory: the write lock, held by every read-modify-write of a
                            shared file and every append to the metadata log

The metadata log is appended to; every other file is replaced atomically (temp file, fsync,
rename, fsync of the directory), so readers never see half a file.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from brokerd.metadata.image import TopicImage
    from brokerd.metadata.registration import PartitionRegistration
    from brokerd.state.broker_registrations import BrokerRegistration
    from brokerd.state.cluster_setup import ClusterSetup
    from brokerd.state.cluster_state import ClusterState
    from brokerd.state.cluster_view import ClusterView
    from brokerd.state.controller_epoch import StaleControllerEpoch
    from brokerd.state.partition_changes import IsrProposal

# Imported on first use: a short kctl command that only looks up the local brokers
# (brokerd.state.local_brokers) does not pay for the metadata log's modules.
_EXPORTS = {
    "BrokerRegistration": "brokerd.state.broker_registrations",
    "ClusterSetup": "brokerd.state.cluster_setup",
    "ClusterState": "brokerd.state.cluster_state",
    "ClusterView": "brokerd.state.cluster_view",
    "IsrProposal": "brokerd.state.partition_changes",
    "PartitionRegistration": "brokerd.metadata.registration",
    "StaleControllerEpoch": "brokerd.state.controller_epoch",
    "TopicImage": "brokerd.metadata.image",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


__all__ = [
    "BrokerRegistration",
    "ClusterSetup",
    "ClusterState",
    "ClusterView",
    "IsrProposal",
    "PartitionRegistration",
    "StaleControllerEpoch",
    "TopicImage",
]
