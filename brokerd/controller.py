"""The controller: the one broker that makes cluster-wide decisions.

A broker becomes controller by claiming controller.json under the state directory's exclusive
lock while no live broker holds it, which raises the controller epoch. Every decision is
written fenced by that epoch (see ClusterState), so a controller that was paused while
another took over changes nothing when it wakes up: its first write is refused and it resigns.

Its duties: create and delete topics with evenly spread replicas; when a broker dies, is
paused past broker.session.timeout.ms or shuts down, move leadership to the first live
in-sync replica (bumping the leader epoch) and drop it from every ISR; bring preferred leaders
back on the imbalance check (auto.leader.rebalance.enable); create topics other brokers were
asked to auto-create.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Concatenate, ParamSpec, TypeVar

from kafka.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    NotControllerError,
    PolicyViolationError,
    PreferredLeaderNotAvailableError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

from brokerd import reassignment
from brokerd.config import BrokerConfig
from brokerd.metadata.editor import TopicsEditor
from brokerd.metadata.image import MetadataDelta
from brokerd.metadata.registration import PartitionChangeBuilder
from brokerd.state import (
    BrokerRegistration,
    ClusterState,
    PartitionRegistration,
    StaleControllerEpoch,
    TopicImage,
)
from brokerd.storage.log_config import LogConfig
from brokerd.storage.topic_name import validate_topic_name

log = logging.getLogger(__name__)

REBALANCE_ENABLE = "auto.leader.rebalance.enable"
IMBALANCE_CHECK_INTERVAL = "leader.imbalance.check.interval.seconds"
IMBALANCE_PERCENTAGE = "leader.imbalance.per.broker.percentage"

# per partition: the partition epoch a decision was made at, and the registration decided
Decisions = dict[tuple[str, int], tuple[int, PartitionRegistration]]


def elect_leader(
    record: PartitionChangeBuilder, isr: list[int], eligible: set[int], unclean: bool
) -> int | None:
    """The leader a partition should have, or None to keep the current one.

    Kafka's rule: a live in-sync leader stays (the preferred replica takes leadership back
    only on the imbalance check, see LeaderRebalance, or when asked: ElectLeaders); else the
    first replica (in assignment order) that is alive and in sync; without one the partition
    stays offline (-1) unless unclean.leader.election.enable allows an out-of-sync replica.
    """
    if record.leader in eligible and record.leader in isr:
        return None
    candidates = [r for r in record.replicas if r in isr and r in eligible]
    if candidates:
        return candidates[0]
    if unclean:
        out_of_sync = [r for r in record.replicas if r in eligible]
        if out_of_sync:
            return out_of_sync[0]
    return -1


def assign_replicas(
    brokers: list[int], partitions: int, replication_factor: int, start: int = 0, first: int = 0
) -> list[list[int]]:
    """Round-robin placement: partition p is led by the (start+p)-th broker and followed by the
    next ones, so leaders spread evenly across brokers (the seeds' CASE1/CASE2). Only
    partitions ``first``..partitions-1 are placed (a topic growing keeps its existing ones)."""
    n = len(brokers)
    return [
        [brokers[(start + p + i) % n] for i in range(replication_factor)] for p in range(first, partitions)
    ]


def _check_replication_factor(replication_factor: int, live_brokers: list[int]) -> None:
    """New partitions placed by the controller need as many live brokers as replicas."""
    if not 1 <= replication_factor <= len(live_brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is not between 1 and the "
            f"{len(live_brokers)} live broker(s)"
        )


def new_partition(index: int, replicas: list[int]) -> PartitionRegistration:
    """A partition as created: led by its first (preferred) replica, every replica in sync."""
    return PartitionRegistration(
        index, list(replicas), leader=replicas[0], leader_epoch=0, isr=list(replicas)
    )


def check_assignment(assignment: list[list[int]], live_brokers: list[int], replication_factor: int) -> None:
    """Kafka's checks on a manual replica assignment: INVALID_REPLICA_ASSIGNMENT when a
    partition has no replicas, a broker twice, an unknown broker or a different count."""
    for p, replicas in enumerate(assignment):
        if not replicas or len(set(replicas)) != len(replicas):
            raise InvalidReplicationAssignmentError(
                f"partition {p}: replicas {replicas} must be non-empty and distinct"
            )
        if len(replicas) != replication_factor:
            raise InvalidReplicationAssignmentError(
                f"partition {p}: {len(replicas)} replica(s), every partition needs {replication_factor}"
            )
        unknown = sorted(set(replicas) - set(live_brokers))
        if unknown:
            raise InvalidReplicationAssignmentError(f"partition {p}: unknown or dead broker(s) {unknown}")


def _elect_preferred(record: PartitionChangeBuilder, live_brokers: Collection[int]) -> Exception | None:
    preferred = record.replicas[0]
    if record.leader == preferred:
        return ElectionNotNeededError(f"broker {preferred} already leads partition {record.partition}")
    if preferred not in live_brokers or preferred not in record.isr:
        return PreferredLeaderNotAvailableError(
            f"preferred replica {preferred} of partition {record.partition} is not live and in sync"
        )
    record.leader = preferred
    record.leader_epoch += 1
    record.partition_epoch += 1
    return None


def _elect_unclean(record: PartitionChangeBuilder, live_brokers: list[int]) -> Exception | None:
    """kafka-leader-election.sh --election-type unclean: a partition whose leader is gone gets
    its first live in-sync replica, or failing that its first live replica, whose log becomes
    the truth (the others truncate to it; what only they had is lost)."""
    if record.leader in live_brokers:
        return ElectionNotNeededError(f"partition {record.partition} is led by live broker {record.leader}")
    leader = elect_leader(record, record.isr, set(live_brokers), True)
    if leader is None or leader < 0:
        return EligibleLeadersNotAvailableError(f"no replica of partition {record.partition} is live")
    record.leader = leader
    record.leader_epoch += 1
    record.partition_epoch += 1
    if leader not in record.isr:
        record.isr = _unclean_isr(record, record.isr)
    return None


def _unclean_isr(record: PartitionChangeBuilder, bypassed: list[int]) -> list[int]:
    """The ISR after electing an out-of-sync leader: the leader alone, its log the truth. The
    bypassed ISR is kept on record so views can say whose records were lost, and when."""
    record.last_unclean_election = {"leader_epoch": record.leader_epoch, "isr": list(bypassed)}
    return [record.leader]


ELECTIONS = {"preferred": _elect_preferred, "unclean": _elect_unclean}
MAX_BROKER_PARTITIONS = "max.broker.partitions"


def check_partition_limit(topics, placement: list[list[int]], limit: int) -> None:
    """Refuse a placement that would put more than ``limit`` replicas on one broker
    (KIP-578's max.broker.partitions), so a typo cannot take a laptop down."""
    added: dict[int, int] = {}
    for replicas in placement:
        for broker_id in replicas:
            added[broker_id] = added.get(broker_id, 0) + 1
    hosted = dict.fromkeys(added, 0)
    for topic in topics.values():
        for record in topic.partitions.values():
            for broker_id in record.replicas:
                if broker_id in hosted:
                    hosted[broker_id] += 1
    for broker_id, count in sorted(added.items()):
        if hosted[broker_id] + count > limit:
            raise PolicyViolationError(
                f"Creating {len(placement)} partition(s) would place {hosted[broker_id] + count} "
                f"replicas on broker {broker_id}, more than its limit of {limit} "
                f"({MAX_BROKER_PARTITIONS}, at most what the open file limit allows)"
            )


def check_room_for(
    topics, partitions: int, replication_factor: int, live_brokers: list[int], limit: int
) -> None:
    """Refuse, before any placement is built, ``partitions`` new partitions of
    ``replication_factor`` replicas that cannot fit on the live brokers under ``limit`` each:
    a count off the wire (up to 2**31-1) is checked by arithmetic, so a refusal costs nothing.
    Any placement needs that many replica slots, so this never refuses what
    check_partition_limit would accept."""
    live = set(live_brokers)
    hosted = sum(1 for t in topics.values() for r in t.partitions.values() for b in r.replicas if b in live)
    room = max(limit * len(live) - hosted, 0)
    if partitions * replication_factor > room:
        raise PolicyViolationError(
            f"Creating {partitions} partition(s) with replication factor {replication_factor} needs "
            f"{partitions * replication_factor} replicas, but the {len(live)} live broker(s) have room "
            f"for {room} more under their limit of {limit} each "
            f"({MAX_BROKER_PARTITIONS}, at most what the open file limit allows)"
        )


def _described(before: PartitionRegistration, after: PartitionRegistration) -> str:
    """A decision as the log tells it: each changed field, old -> new."""
    return ", ".join(
        f"{name} {getattr(before, name)} -> {value}" for name, value in after.changes_from(before).items()
    )


def _reassign(record: PartitionChangeBuilder, target: list[int] | None, live_brokers: list[int]) -> None:
    """Start moving a partition to ``target``, or cancel its ongoing reassignment (None)."""
    if target is None:
        reassignment.cancel(record)
    else:
        check_assignment([target], live_brokers, len(target))
        reassignment.start(record, target)


def _decided(
    topics: TopicsEditor,
    topic: str,
    index: int,
    decide: Callable[[PartitionChangeBuilder], Exception | None],
) -> Exception | None:
    """One partition's decision by hand (ElectLeaders, AlterPartitionReassignments), set in
    ``topics`` unless it failed: None, or the Kafka error for this partition only."""
    registration = topics.partition(topic, index)
    if registration is None:
        return UnknownTopicOrPartitionError(f"{topic}-{index} does not exist")
    builder = PartitionChangeBuilder.of(registration)
    try:
        error = decide(builder)
    except Exception as exc:  # a Kafka error for this partition only
        return exc
    if error is None:
        topics.set_partition(topic, builder.build())
    return error


@dataclass(frozen=True)
class LeaderRebalance:
    """auto.leader.rebalance.enable as Kafka's controller applies it.

    A live in-sync leader is never moved the moment the preferred replica is back in sync:
    it would truncate what it appended but had not committed yet, and leadership would bounce
    with every blip. Instead, every leader.imbalance.check.interval.seconds, each broker for
    which more than leader.imbalance.per.broker.percentage of the partitions it is the
    preferred (first) replica of are led elsewhere takes those back where it is live and in
    sync. `kctl topic elect-leaders` (ElectLeaders) does it at once.
    """

    enabled: bool
    interval_s: float
    percentage: int

    @classmethod
    def from_config(cls, config: BrokerConfig) -> LeaderRebalance:
        """Read once, at start: in Kafka too these settings are not dynamic."""
        return cls(
            config.get(REBALANCE_ENABLE),
            config.get(IMBALANCE_CHECK_INTERVAL),
            config.get(IMBALANCE_PERCENTAGE),
        )


@dataclass
class PreferredLeadership:
    """One broker's leadership of the partitions it is the preferred (first) replica of."""

    broker_id: int
    preferred: int = 0
    led_elsewhere: list[tuple[str, int]] = field(default_factory=list)  # or led by none

    def exceeds(self, percentage: int) -> bool:
        """Kafka's imbalance test: the share led elsewhere is above the percentage."""
        return len(self.led_elsewhere) * 100 > percentage * self.preferred

    def reason(self, leader_epoch: int, percentage: int) -> dict:
        """What a partition keeps (last_leader_rebalance) when this imbalance moves its
        leadership back at ``leader_epoch``, so views can say why."""
        return {
            "leader_epoch": leader_epoch,
            "led": self.preferred - len(self.led_elsewhere),
            "preferred": self.preferred,
            "percentage": percentage,
        }


def preferred_leadership(topics: Mapping[str, TopicImage]) -> dict[int, PreferredLeadership]:
    """Each broker's PreferredLeadership, in one pass over every partition: the imbalance
    check's whole cost, paid once per leader.imbalance.check.interval.seconds."""
    shares: dict[int, PreferredLeadership] = {}
    for topic in topics.values():
        for index, record in topic.partitions.items():
            preferred = record.replicas[0]
            share = shares.setdefault(preferred, PreferredLeadership(preferred))
            share.preferred += 1
            if record.leader != preferred:
                share.led_elsewhere.append((topic.name, index))
    return shares


def _elect_back(
    topics: Mapping[str, TopicImage], share: PreferredLeadership, eligible: set[int], percentage: int
) -> Decisions:
    """Preferred leader elections for the partitions of an imbalanced broker that it can lead
    (live, not shutting down, in sync), each recording the imbalance as its reason."""
    decided: Decisions = {}
    for name, index in share.led_elsewhere:
        record = topics[name].partitions[index]
        trial = PartitionChangeBuilder.of(record)
        if _elect_preferred(trial, eligible) is None:
            trial.last_leader_rebalance = share.reason(trial.leader_epoch, percentage)
            decided[(name, index)] = (record.partition_epoch, trial.build())
    if decided:
        log.info(
            "broker %d leads %d of the %d partitions it is the preferred replica of, more "
            "than %s=%d%% led elsewhere: leadership of %d back to it",
            share.broker_id,
            share.preferred - len(share.led_elsewhere),
            share.preferred,
            IMBALANCE_PERCENTAGE,
            percentage,
            len(decided),
        )
    return decided


P = ParamSpec("P")
R = TypeVar("R")


def answered_as_not_controller(
    request: Callable[Concatenate[Controller, P], R],
) -> Callable[Concatenate[Controller, P], R]:
    """An admin request's write refused because another broker claimed a newer controller
    epoch meanwhile: this broker resigns and answers NOT_CONTROLLER, which clients retry at the
    new controller (as Kafka's brokers answer for a controller that moved), not an unknown error."""

    @functools.wraps(request)
    def guarded(controller: Controller, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return request(controller, *args, **kwargs)
        except StaleControllerEpoch as exc:
            controller._fenced(str(exc))
            raise NotControllerError(
                f"broker {controller.broker_id} is no longer the controller ({exc})"
            ) from exc

    return guarded


class Controller:
    def __init__(
        self,
        broker_id: int,
        state: ClusterState,
        session_timeout_s: float,
        rebalance: LeaderRebalance,
        log_defaults: Callable[[], Mapping[str, str]],
        max_broker_partitions: Callable[[], int],
    ):
        self.broker_id = broker_id
        self.state = state
        self.session_timeout_s = session_timeout_s
        self.rebalance = rebalance
        self.log_defaults = log_defaults  # the broker-level topic config defaults
        self.max_broker_partitions = max_broker_partitions
        self.epoch: int | None = None
        self._seen: tuple[frozenset[int], frozenset[int]] | None = None  # live, eligible
        self._next_imbalance_check = 0.0  # time.monotonic(); set on becoming controller

    @property
    def is_active(self) -> bool:
        return self.epoch is not None

    def _live_now(self, broker_id: int) -> bool:
        """Whether a broker is live by its registration as it is now: one that registered and
        claimed the controllership after this round's listing of brokers (two starting at
        once) is not taken over, which would fence its first decisions (NOT_CONTROLLER)."""
        return any(
            r.broker_id == broker_id and r.is_live(self.session_timeout_s) for r in self.state.brokers()
        )

    def maintain(
        self,
        registrations: list[BrokerRegistration],
        topics: Mapping[str, TopicImage],
        changed: Sequence[MetadataDelta],
        auto_create: Callable[[str], object],
    ) -> None:
        """One controller round, run by every broker: claim the controllership if it is free,
        or, as the active controller, react to what happened since the last round: fence the
        brokers whose session expired (or that are shutting down) out of ISRs and elect leaders
        where theirs is gone, balance leadership when the check is due, and create the topics
        brokers were asked for. ``topics`` is the broker's metadata image and ``changed`` the
        deltas it applied since the last round (see _partitions_to_review)."""
        live = {r.broker_id for r in registrations if r.is_live(self.session_timeout_s)}
        if not self.is_active:
            self._claim_if_vacant(live)
            return
        if self.state.controller() != (self.broker_id, self.epoch):
            self._fenced("another broker holds a newer controller epoch")
            return
        eligible = live - {r.broker_id for r in registrations if r.shutting_down}
        seen = (frozenset(live), frozenset(eligible))
        try:
            self._fence_and_elect(topics, self._partitions_to_review(topics, changed, seen), eligible)
            self._seen = seen
            self._balance_leaders_if_due(topics, eligible)
            self._create_requested_topics(auto_create)
        except StaleControllerEpoch as exc:
            self._fenced(str(exc))

    def _claim_if_vacant(self, live: set[int]) -> None:
        """Become the controller, at the next controller epoch, if no live broker is."""
        self.epoch = self.state.claim_controller(self.broker_id, lambda b: b in live or self._live_now(b))
        if self.epoch is not None:
            log.info("broker %d is controller at epoch %d", self.broker_id, self.epoch)
            self._seen = None
            self._next_imbalance_check = time.monotonic() + self.rebalance.interval_s

    def _partitions_to_review(
        self,
        topics: Mapping[str, TopicImage],
        changed: Sequence[MetadataDelta],
        seen: tuple[frozenset[int], frozenset[int]],
    ) -> Iterable[tuple[str, int]]:
        """The partitions this round looks at: those the deltas touched (and those of topics
        created or whose configs changed), or every partition when a broker came, went or
        started shutting down, a broker config changed (unclean.leader.election.enable) or
        this broker just became controller. An idle cluster costs nothing per partition,
        except on the imbalance check (see LeaderRebalance), one pass per interval."""
        if seen != self._seen or any(delta.full or delta.broker_configs for delta in changed):
            return [(t.name, p) for t in topics.values() for p in t.partitions]
        return {key for delta in changed for key in delta.partitions} | {
            (name, p)
            for delta in changed
            for name in delta.topic_configs | delta.created_topics
            if name in topics
            for p in topics[name].partitions
        }

    def _fence_and_elect(
        self, topics: Mapping[str, TopicImage], partitions: Iterable[tuple[str, int]], eligible: set[int]
    ) -> None:
        """Take the brokers that are not ``eligible`` (session expired, shutting down) out of
        these partitions' ISRs, elect a leader where theirs is gone, and complete the
        reassignments whose new replicas have caught up."""
        self._write(topics, self._decide(topics, partitions, eligible))

    def _balance_leaders_if_due(self, topics: Mapping[str, TopicImage], eligible: set[int]) -> None:
        if self._imbalance_check_due():
            self._write(topics, self._rebalance_leaders(topics, eligible))

    def _create_requested_topics(self, auto_create: Callable[[str], object]) -> None:
        """The topics other brokers were asked for by name (auto.create.topics.enable)."""
        for name in self.state.take_topic_requests():
            auto_create(name)

    def _write(self, topics: Mapping[str, TopicImage], decided: Decisions) -> None:
        """Record decisions, each a compare-and-set on its partition epoch, and log those made."""
        if not decided:
            return
        told = {
            key: _described(topics[key[0]].partitions[key[1]], record) for key, (_, record) in decided.items()
        }
        for key in self.state.change_partitions(self._require_active(), decided):
            log.info("%s-%d: %s", *key, told[key])

    def _imbalance_check_due(self) -> bool:
        """Whether the imbalance check runs this round: every interval, from the moment this
        broker became controller, with auto.leader.rebalance.enable."""
        now = time.monotonic()
        if not self.rebalance.enabled or now < self._next_imbalance_check:
            return False
        self._next_imbalance_check = now + self.rebalance.interval_s
        return True

    def _rebalance_leaders(self, topics: Mapping[str, TopicImage], eligible: set[int]) -> Decisions:
        """The imbalance check (see LeaderRebalance): each broker whose share of preferred
        partitions led elsewhere is above the percentage is elected on those where it is
        live and in sync, and each such partition records the imbalance that moved it."""
        decided: Decisions = {}
        percentage = self.rebalance.percentage
        for share in preferred_leadership(topics).values():
            if share.exceeds(percentage):
                decided |= _elect_back(topics, share, eligible, percentage)
        return decided

    def _fenced(self, why: str) -> None:
        """A zombie controller: its epoch has been superseded while it was not looking."""
        self.state.record_fenced_controller(self.broker_id, self._require_active())
        self.resign(why)

    def resign(self, why: str = "stopping") -> None:
        if self.is_active:
            log.info("broker %d resigns as controller (epoch %d): %s", self.broker_id, self.epoch, why)
        self.epoch = None

    def _decide(
        self, topics: Mapping[str, TopicImage], candidates: Iterable[tuple[str, int]], eligible: set[int]
    ) -> Decisions:
        """The candidates whose leader, ISR or reassignment must change, each with the
        partition epoch it was decided at and its new registration."""
        decided: Decisions = {}
        unclean_of: dict[str, bool] = {}
        defaults: Mapping[str, str] | None = None
        for name, index in candidates:
            topic = topics.get(name)
            if topic is None:
                continue
            record = topic.partitions.get(index)
            if record is None:
                continue
            if name not in unclean_of:
                defaults = self.log_defaults() if defaults is None else defaults
                unclean_of[name] = LogConfig.for_topic(topic.configs, defaults).unclean_leader_election_enable
            trial = PartitionChangeBuilder.of(record)
            self._reconcile_partition(trial, eligible, unclean_of[name])
            decision = trial.build()
            if decision != record:
                decided[(name, index)] = (record.partition_epoch, decision)
        return decided

    def _reconcile_partition(self, record: PartitionChangeBuilder, eligible: set[int], unclean: bool) -> None:
        """Apply the election rules to one partition (in place)."""
        reassignment.maybe_complete(record)
        isr = [r for r in record.isr if r in eligible]
        if not isr:  # keep the last in-sync replica on record, as Kafka does
            isr = [record.leader] if record.leader in record.isr else record.isr[:1]
        leader = elect_leader(record, isr, eligible, unclean)
        changed = False
        if leader is not None and leader != record.leader:
            record.leader = leader
            record.leader_epoch += 1
            changed = True
            if leader >= 0 and leader not in isr:
                isr = _unclean_isr(record, isr)
        if isr != record.isr:
            record.isr = isr
            changed = True
        if changed:
            record.partition_epoch += 1

    def _require_active(self) -> int:
        if self.epoch is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return self.epoch

    @answered_as_not_controller
    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str],
        live_brokers: list[int],
        validate_only: bool = False,
        assignment: list[list[int]] | None = None,
    ) -> TopicImage:
        """Validate, place replicas (or take the given ``assignment``, one replica list per
        partition) and record a new topic; raises Kafka errors on bad input."""
        epoch = self._require_active()
        validate_topic_name(name)
        LogConfig.from_configs(configs)
        if assignment is not None:
            check_assignment(assignment, live_brokers, len(assignment[0]))
            partitions, replication_factor = len(assignment), len(assignment[0])
        if partitions < 1:
            raise InvalidPartitionsError(f"number of partitions must be at least 1, got {partitions}")
        _check_replication_factor(replication_factor, live_brokers)
        limit = self.max_broker_partitions()
        with self.state.update_topics(epoch) as topics:
            if name in topics:
                raise TopicAlreadyExistsError(f"topic {name!r} already exists")
            check_room_for(topics.image_topics, partitions, replication_factor, live_brokers, limit)
            placement = assignment or assign_replicas(
                sorted(live_brokers), partitions, replication_factor, start=len(topics)
            )
            check_partition_limit(topics.image_topics, placement, limit)
            record = TopicImage(
                name,
                uuid.uuid4().hex,
                dict(configs),
                {p: new_partition(p, replicas) for p, replicas in enumerate(placement)},
            )
            if validate_only:
                return record
            topics[name] = record
        log.info(
            "created topic %s with %d partition(s), replication factor %d",
            name,
            partitions,
            replication_factor,
        )
        return record

    @answered_as_not_controller
    def create_partitions(
        self,
        name: str,
        count: int,
        assignment: list[list[int]] | None,
        live_brokers: list[int],
        validate_only: bool = False,
    ) -> None:
        """Grow a topic to ``count`` partitions (CreatePartitions); partitions never shrink.

        New partitions get the topic's replication factor, placed round-robin after the
        existing ones unless ``assignment`` gives their replicas. The internal topics are
        refused: a group's or transaction's partition is a hash modulo their partition count.
        """
        epoch = self._require_active()
        if name.startswith("__"):
            raise InvalidTopicError(f"the partitions of internal topic {name!r} cannot change")
        with self.state.update_topics(epoch) as topics:
            topic = topics.get(name)
            if topic is None:
                raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            current = len(topic.partitions)
            if count <= current:
                raise InvalidPartitionsError(
                    f"topic {name!r} has {current} partition(s); the new count must be higher, got {count}"
                )
            replication_factor = len(topic.partitions[0].replicas)
            if assignment is not None and len(assignment) != count - current:
                raise InvalidReplicationAssignmentError(
                    f"Attempted to add {count - current} additional partition(s), but "
                    f"{len(assignment)} assignment(s) were specified."
                )
            limit = self.max_broker_partitions()
            check_room_for(topics.image_topics, count - current, replication_factor, live_brokers, limit)
            if assignment is None:
                _check_replication_factor(replication_factor, live_brokers)
                assignment = assign_replicas(
                    sorted(live_brokers), count, replication_factor, start=len(topics), first=current
                )
            check_assignment(assignment, live_brokers, replication_factor)
            check_partition_limit(topics.image_topics, assignment, limit)
            if validate_only:
                return
            for p, replicas in enumerate(assignment, start=current):
                topics.set_partition(name, new_partition(p, replicas))
        log.info("topic %s grew from %d to %d partitions", name, current, count)

    @answered_as_not_controller
    def elect_leaders(
        self, election: str, wanted: list[tuple[str, int]] | None, live_brokers: list[int]
    ) -> dict[tuple[str, int], Exception | None]:
        """ElectLeaders, ``preferred`` or ``unclean`` (see ELECTIONS).

        ``wanted`` None means every partition. Per partition: None when elected,
        ELECTION_NOT_NEEDED when there is nothing to do, PREFERRED_LEADER_NOT_AVAILABLE or
        ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica may lead, UNKNOWN_TOPIC_OR_PARTITION
        for partitions that do not exist.
        """
        elect = ELECTIONS[election]
        epoch = self._require_active()
        results: dict[tuple[str, int], Exception | None] = {}
        with self.state.update_topics(epoch) as topics:
            keys = (
                wanted if wanted is not None else [(t.name, p) for t in topics.values() for p in t.partitions]
            )
            for topic, index in keys:
                results[(topic, index)] = _decided(
                    topics, topic, index, lambda record: elect(record, live_brokers)
                )
        for (topic, index), error in results.items():
            if error is None:
                log.info("%s-%d: %s leader elected", topic, index, election)
        return results

    @answered_as_not_controller
    def reassign_partitions(
        self, targets: dict[tuple[str, int], list[int] | None], live_brokers: list[int]
    ) -> dict[tuple[str, int], Exception | None]:
        """AlterPartitionReassignments: start moving each partition to its target replicas,
        or cancel its ongoing reassignment (target None). Errors are per partition."""
        epoch = self._require_active()
        results: dict[tuple[str, int], Exception | None] = {}
        with self.state.update_topics(epoch) as topics:
            for (topic, index), target in targets.items():
                results[(topic, index)] = _decided(
                    topics,
                    topic,
                    index,
                    functools.partial(_reassign, target=target, live_brokers=live_brokers),
                )
        for (topic, index), error in results.items():
            if error is None:
                log.info("%s-%d: reassignment to %s", topic, index, targets[(topic, index)])
        return results

    @answered_as_not_controller
    def delete_topic(self, name: str) -> None:
        epoch = self._require_active()
        with self.state.update_topics(epoch) as topics:
            if name not in topics:
                raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
            del topics[name]
        log.info("deleted topic %s", name)
