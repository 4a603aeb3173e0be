"""The controller: the one broker that makes cluster-wide decisions.

A broker becomes controller by claiming controller.json under the state directory's exclusive
lock while no live broker holds it, which raises the controller epoch. Every decision is
written fenced by that epoch (see ClusterState), so a controller that was paused while
another took over changes nothing when it wakes up: its first write is refused and it resigns.

Its duties: create and delete topics with evenly spread replicas; when a broker dies, is
paused past broker.session.timeout.ms or shuts down, move leadership to the first live
in-sync replica (bumping the leader epoch) and drop it from every ISR; bring preferred leaders
back (auto.leader.rebalance.enable); create topics other brokers were asked to auto-create.
"""

from __future__ import annotations

import copy
import logging
import uuid

from kafka.errors import (
    InvalidPartitionsError, InvalidReplicationFactorError, NotControllerError,
    TopicAlreadyExistsError, UnknownTopicOrPartitionError,
)

from brokerd.state import (
    BrokerRegistration, ClusterState, PartitionRecord, StaleControllerEpoch, TopicRecord,
)
from brokerd.storage import LogConfig, validate_topic_name

log = logging.getLogger(__name__)


def elect_leader(record: PartitionRecord, isr: list[int], eligible: set[int], unclean: bool,
                 prefer_first: bool) -> int | None:
    """The leader a partition should have, or None to keep the current one.

    Kafka's rule: the first replica (in assignment order) that is alive and in sync; the
    preferred (first) replica takes leadership back when it is; without one the partition
    stays offline (-1) unless unclean.leader.election.enable allows an out-of-sync replica.
    """
    candidates = [r for r in record.replicas if r in isr and r in eligible]
    if prefer_first and candidates and candidates[0] == record.replicas[0]:
        return candidates[0] if record.leader != candidates[0] else None
    if record.leader in eligible and record.leader in isr:
        return None
    if candidates:
        return candidates[0]
    if unclean:
        out_of_sync = [r for r in record.replicas if r in eligible]
        if out_of_sync:
            return out_of_sync[0]
    return -1


def assign_replicas(brokers: list[int], partitions: int, replication_factor: int,
                    start: int = 0) -> list[list[int]]:
    """Round-robin placement: partition p is led by the (start+p)-th broker and followed by the
    next ones, so leaders spread evenly across brokers (the seeds' CASE1/CASE2)."""
    n = len(brokers)
    return [[brokers[(start + p + i) % n] for i in range(replication_factor)]
            for p in range(partitions)]


class Controller:
    def __init__(self, broker_id: int, state: ClusterState, session_timeout_s: float,
                 preferred_leader_rebalance: bool):
        self.broker_id = broker_id
        self.state = state
        self.session_timeout_s = session_timeout_s
        self.preferred_leader_rebalance = preferred_leader_rebalance
        self.epoch: int | None = None

    @property
    def is_active(self) -> bool:
        return self.epoch is not None

    def maintain(self, registrations: list[BrokerRegistration], topics: dict[str, TopicRecord],
                 auto_create) -> None:
        """One controller round, run by every broker: claim or check the controllership, and
        if active, react to brokers coming and going. ``topics`` is the broker's cached view:
        the state lock is taken only when it shows something to change."""
        live = {r.broker_id for r in registrations if r.is_live(self.session_timeout_s)}
        if not self.is_active:
            self.epoch = self.state.claim_controller(self.broker_id, lambda b: b in live)
            if self.epoch is not None:
                log.info("broker %d is controller at epoch %d", self.broker_id, self.epoch)
            return
        if self.state.controller() != (self.broker_id, self.epoch):
            self.resign("another broker holds a newer controller epoch")
            return
        eligible = live - {r.broker_id for r in registrations if r.shutting_down}
        try:
            if self._would_change(topics, live, eligible):
                with self.state.update_topics(self.epoch) as current:
                    moves = [m for t in current.values() for m in self._reconcile(t, live, eligible)]
                for move in moves:
                    log.info("%s", move)
            for name in self.state.take_topic_requests():
                auto_create(name)
        except StaleControllerEpoch as exc:
            self.resign(str(exc))

    def resign(self, why: str = "stopping") -> None:
        if self.is_active:
            log.info("broker %d resigns as controller (epoch %d): %s", self.broker_id,
                     self.epoch, why)
        self.epoch = None

    def _would_change(self, topics: dict[str, TopicRecord], live: set[int],
                      eligible: set[int]) -> bool:
        """Dry run of a round on a copy of the cached metadata."""
        for topic in topics.values():
            trial = copy.deepcopy(topic)
            self._reconcile(trial, live, eligible)
            if trial.to_json() != topic.to_json():
                return True
        return False

    def _reconcile(self, topic: TopicRecord, live: set[int], eligible: set[int]) -> list[str]:
        """Apply the election rules to every partition of ``topic``; returns the leader moves."""
        moves = []
        unclean = LogConfig.from_configs(topic.configs).unclean_leader_election_enable
        for record in topic.partitions.values():
            isr = [r for r in record.isr if r in eligible]
            if not isr:  # keep the last in-sync replica on record, as Kafka does
                isr = [record.leader] if record.leader in record.isr else record.isr[:1]
            leader = elect_leader(record, isr, eligible, unclean, self.preferred_leader_rebalance)
            changed = False
            if leader is not None and leader != record.leader:
                moves.append(f"{topic.name}-{record.partition}: leader {record.leader} -> "
                             f"{leader} at leader epoch {record.leader_epoch + 1}")
                record.leader = leader
                record.leader_epoch += 1
                changed = True
                if leader >= 0 and leader not in isr:
                    isr = [leader]  # unclean election: the new leader's log is the truth
            if isr != record.isr:
                record.isr = isr
                changed = True
            if changed:
                record.partition_epoch += 1
        return moves

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
