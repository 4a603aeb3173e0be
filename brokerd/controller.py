"""The controller: the one broker that makes cluster-wide decisions.

Whoever holds the controller lock in the state directory is controller; taking it bumps the
controller epoch, and every decision is written fenced by that epoch (see ClusterState), so a
controller that was paused while another took over changes nothing when it wakes up.
"""

from __future__ import annotations

import logging
import uuid

from kafka.errors import (
    InvalidPartitionsError, InvalidReplicationFactorError, NotControllerError,
    TopicAlreadyExistsError, UnknownTopicOrPartitionError,
)

from brokerd.state import ClusterState, PartitionRecord, TopicRecord
from brokerd.storage import LogConfig, validate_topic_name

log = logging.getLogger(__name__)


def assign_replicas(brokers: list[int], partitions: int, replication_factor: int,
                    start: int = 0) -> list[list[int]]:
    """Round-robin placement: partition p is led by the (start+p)-th broker and followed by the
    next ones, so leaders spread evenly across brokers (the seeds' CASE1/CASE2)."""
    n = len(brokers)
    return [[brokers[(start + p + i) % n] for i in range(replication_factor)]
            for p in range(partitions)]


class Controller:
    def __init__(self, broker_id: int, state: ClusterState):
        self.broker_id = broker_id
        self.state = state
        self.epoch: int | None = None
        self._lock = None

    @property
    def is_active(self) -> bool:
        return self.epoch is not None

    def try_elect(self) -> bool:
        """Become controller if nobody holds the controller lock."""
        if self.is_active:
            return False
        self._lock = self.state.try_acquire_controller_lock()
        if self._lock is None:
            return False
        self.epoch = self.state.claim_controller(self.broker_id)
        log.info("broker %d is controller at epoch %d", self.broker_id, self.epoch)
        return True

    def resign(self) -> None:
        if self._lock is not None:
            self._lock.release()
        self._lock = None
        self.epoch = None

    def _require_active(self) -> int:
        if not self.is_active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return self.epoch

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str], live_brokers: list[int],
                     validate_only: bool = False) -> TopicRecord:
        """Validate, place replicas and record a new topic; raises Kafka errors on bad input."""
        epoch = self._require_active()
        validate_topic_name(name)
        LogConfig.from_configs(configs)
        if partitions < 1:
            raise InvalidPartitionsError(f"number of partitions must be at least 1, got {partitions}")
        if not 1 <= replication_factor <= len(live_brokers):
            raise InvalidReplicationFactorError(
                f"replication factor {replication_factor} is not between 1 and the "
                f"{len(live_brokers)} live broker(s)")
        with self.state.update_topics(epoch) as topics:
            if name in topics:
                raise TopicAlreadyExistsError(f"topic {name!r} already exists")
            placement = assign_replicas(sorted(live_brokers), partitions, replication_factor,
                                        start=len(topics))
            record = TopicRecord(name, uuid.uuid4().hex, dict(configs), {
                p: PartitionRecord(p, replicas, leader=replicas[0], leader_epoch=0,
                                   isr=list(replicas))
                for p, replicas in enumerate(placement)})
            if validate_only:
                return record
            topics[name] = record
        log.info("created topic %s with %d partition(s), replication factor %d",
                 name, partitions, replication_factor)
        return record

    def delete_topic(self, name: str) -> None:
        epoch = self._require_active()
        with self.state.update_topics(epoch) as topics:
            if name not in topics:
                raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            del topics[name]
        log.info("deleted topic %s", name)
