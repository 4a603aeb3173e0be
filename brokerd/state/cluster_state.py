"""ClusterState: one cluster's state directory, the only way into ``<cluster>/state/``.

Each job on the directory is a part in its own module (the broker plan, broker
registrations, the controller epoch, injected faults, the metadata log's topics, configs and
partition changes, the topic-request queue, producer ids, replica status, security files);
ClusterState is all of them over one directory, so brokers and kctl hold one object and no
other code opens these files.
"""

from __future__ import annotations

from brokerd.state.broker_registrations import BrokerRegistrations
from brokerd.state.cluster_plan import ClusterPlan
from brokerd.state.controller_epoch import ControllerEpochs
from brokerd.state.faults import InjectedFaults
from brokerd.state.partition_changes import PartitionChanges
from brokerd.state.producer_ids import ProducerIdBlocks
from brokerd.state.replica_status import ReplicaStatusFiles
from brokerd.state.security import SecurityFiles
from brokerd.state.topic_requests import TopicRequests
from brokerd.state.topics import TopicsAndConfigs


class ClusterState(
    ClusterPlan,
    BrokerRegistrations,
    ControllerEpochs,
    InjectedFaults,
    TopicsAndConfigs,
    PartitionChanges,
    TopicRequests,
    ProducerIdBlocks,
    ReplicaStatusFiles,
    SecurityFiles,
):
    """Reads and writes one cluster's ``state/`` directory."""

    def initialize(self, broker_ports: dict[int, int]) -> str:
        """Create the state directory for a new cluster (its plan, the metadata log, each
        planned broker's directory); on an existing one, keep what is there. Returns the
        cluster id."""
        for sub in ("brokers", "replicas"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        cluster_id = self._create_plan(broker_ports)
        self._open_metadata_log()
        for broker_id in self.planned_brokers():
            self.broker_dir(broker_id).mkdir(parents=True, exist_ok=True)
        return cluster_id
