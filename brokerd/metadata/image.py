"""The metadata image: what the cluster metadata says at one offset of the metadata log
(KRaft's MetadataImage), and the delta that a run of records makes to it (KRaft's
MetadataDelta), carrying the new values.

An image never changes: a reader replays the records it has not applied yet into a delta
and applies the delta, which makes a new image. The new image shares with the old one
every topic the delta did not touch, and a touched topic shares every partition it did not
change: applying a delta copies the map of topics and the map of partitions of each touched
topic (KRaft's TopicsDelta and TopicDelta do the same), never a partition. So a broker
following the log pays for what changed; the size of the cluster only costs dictionary
copies, done in C.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from brokerd.metadata import records as r
from brokerd.metadata.registration import PartitionRegistration, Reason


def _merged(registration: PartitionRegistration, change: r.PartitionChangeRecord) -> PartitionRegistration:
    """The partition with the fields ``change`` sets (every reader does this for every
    PartitionChangeRecord: spelt out, it costs a third of dataclasses.replace)."""
    return PartitionRegistration(
        registration.partition,
        registration.replicas if change.replicas is None else change.replicas,
        registration.leader if change.leader is None else change.leader,
        registration.leader_epoch if change.leader_epoch is None else change.leader_epoch,
        registration.isr if change.isr is None else change.isr,
        registration.partition_epoch if change.partition_epoch is None else change.partition_epoch,
        registration.adding_replicas if change.adding_replicas is None else change.adding_replicas,
        registration.removing_replicas if change.removing_replicas is None else change.removing_replicas,
        _newer(registration.last_unclean_election, change.last_unclean_election),
        _newer(registration.last_leader_rebalance, change.last_leader_rebalance),
    )


def _newer(reason: Reason | None, change: Reason | None) -> Reason | None:
    return reason if change is None else change


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: str
    configs: Mapping[str, str]
    partitions: Mapping[int, PartitionRegistration]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topic_id": self.topic_id,
            "configs": dict(self.configs),
            "partitions": {str(p): registration.to_json() for p, registration in self.partitions.items()},
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TopicImage:
        partitions = {int(p): PartitionRegistration(**fields) for p, fields in doc["partitions"].items()}
        return cls(doc["name"], doc["topic_id"], dict(doc["configs"]), partitions)


@dataclass(frozen=True, slots=True)
class MetadataImage:
    offset: int = -1  # of the last record applied
    topics: Mapping[str, TopicImage] = field(default_factory=dict)
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # "<id>" or "<default>"
    group_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # group id -> its configs

    # -- snapshots ------------------------------------------------------------------------
    def to_snapshot(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "topics": [t.to_json() for t in self.topics.values()],
            "broker_configs": self.broker_configs,
            "group_configs": self.group_configs,
        }

    @classmethod
    def from_snapshot(cls, doc: Mapping[str, Any]) -> MetadataImage:
        return cls(
            doc["offset"],
            {t["name"]: TopicImage.from_json(t) for t in doc["topics"]},
            {e: dict(c) for e, c in doc["broker_configs"].items()},
            {g: dict(c) for g, c in doc.get("group_configs", {}).items()},
        )


ConfigChanges = dict[str, str | None]  # config name -> its new value, None: removed


class TopicDelta:
    """What a delta changes of one topic: the new values of the partitions it changes and of
    the configs it sets or removes, over the topic as it was (or as its TopicRecord made it)."""

    __slots__ = ("image", "created", "partitions", "configs")

    def __init__(self, image: TopicImage, created: bool):
        self.image = image
        self.created = created
        self.partitions: dict[int, PartitionRegistration] = {}
        self.configs: ConfigChanges = {}

    def partition(self, index: int) -> PartitionRegistration:
        changed = self.partitions.get(index)
        return self.image.partitions[index] if changed is None else changed

    def apply(self) -> TopicImage:
        partitions = self.image.partitions
        if self.partitions:
            partitions = {**partitions, **self.partitions}
        return replace(self.image, configs=_changed(self.image.configs, self.configs), partitions=partitions)


class MetadataDelta:
    """The records applied to ``image`` since it was taken, as new values: the topics created
    or changed (TopicDelta), those removed, and the broker and group configs set or removed.
    ``full``: the reader started over from a snapshot (or had taken nothing yet), so anything
    may have changed.

    Consumers ask what changed (``partitions``, ``created_topics``, ``removed_topics``,
    ``topic_configs``, ``broker_configs``) and read the values from the new image.
    """

    __slots__ = ("image", "offset", "full", "topics", "removed_topics", "broker_configs", "group_configs")

    def __init__(self, image: MetadataImage, full: bool = False):
        self.image = image
        self.offset = image.offset
        self.full = full
        self.topics: dict[str, TopicDelta] = {}
        self.removed_topics: set[str] = set()  # a topic re-created since is in topics too
        self.broker_configs: dict[str, ConfigChanges] = {}
        self.group_configs: dict[str, ConfigChanges] = {}

    def __bool__(self) -> bool:
        return bool(
            self.topics or self.removed_topics or self.broker_configs or self.group_configs or self.full
        )

    @property
    def partitions(self) -> set[tuple[str, int]]:
        return {(name, index) for name, topic in self.topics.items() for index in topic.partitions}

    @property
    def created_topics(self) -> set[str]:
        return {name for name, topic in self.topics.items() if topic.created}

    @property
    def topic_configs(self) -> set[str]:
        """The topics whose configs ConfigRecords changed."""
        return {name for name, topic in self.topics.items() if topic.configs}

    # -- replaying records ---------------------------------------------------------------------
    def replay(self, entry: r.LogEntry) -> None:
        if entry.offset <= self.offset:
            return  # already in the image (a snapshot this reader started from)
        self.offset = entry.offset
        record = entry.record
        if isinstance(record, r.TopicRecord):
            topic = TopicImage(record.name, record.topic_id, dict(record.configs), {})
            self.topics[record.name] = TopicDelta(topic, created=True)
        elif isinstance(record, r.PartitionRecord):
            self._topic(record.topic).partitions[record.registration.partition] = record.registration
        elif isinstance(record, r.PartitionChangeRecord):
            topic_delta = self._topic(record.topic)
            topic_delta.partitions[record.partition] = _merged(
                topic_delta.partition(record.partition), record
            )
        elif isinstance(record, r.RemoveTopicRecord):
            self.topics.pop(record.name, None)
            self.removed_topics.add(record.name)
        else:
            self._replay_config(record)

    def extend(self, later: MetadataDelta) -> None:
        """Take in the changes of ``later``, a delta over the image this one makes: this one
        then makes the image ``later`` makes. (The values are ``later``'s, shared.)"""
        self.offset = later.offset
        self.full |= later.full
        for name in later.removed_topics:
            self.topics.pop(name, None)
            self.removed_topics.add(name)
        for name, changed in later.topics.items():
            if changed.created:
                self.topics[name] = TopicDelta(changed.image, created=True)
            topic = self._topic(name)
            topic.partitions.update(changed.partitions)
            topic.configs.update(changed.configs)
        for entity, changes in later.broker_configs.items():
            self.broker_configs.setdefault(entity, {}).update(changes)
        for group, changes in later.group_configs.items():
            self.group_configs.setdefault(group, {}).update(changes)

    def _topic(self, name: str) -> TopicDelta:
        topic = self.topics.get(name)
        if topic is None:
            topic = self.topics[name] = TopicDelta(self.image.topics[name], created=False)
        return topic

    def _replay_config(self, record: r.ConfigRecord) -> None:
        if record.resource_type == r.TOPIC_RESOURCE:
            changes = self._topic(record.resource_name).configs
        elif record.resource_type == r.GROUP_RESOURCE:
            changes = self.group_configs.setdefault(record.resource_name, {})
        else:
            changes = self.broker_configs.setdefault(record.resource_name, {})
        changes[record.name] = record.value

    # -- the new image ---------------------------------------------------------------------------
    def apply(self) -> MetadataImage:
        """The image with these changes: the old one's topics, partitions and configs shared
        where unchanged."""
        topics = self.image.topics
        if self.topics or self.removed_topics:
            topics = dict(topics)
            for name in self.removed_topics:
                topics.pop(name, None)
            for name, topic in self.topics.items():
                topics[name] = topic.apply()
        return MetadataImage(
            self.offset,
            topics,
            _changed_entities(self.image.broker_configs, self.broker_configs),
            _changed_entities(self.image.group_configs, self.group_configs),
        )


def _changed(configs: Mapping[str, str], changes: ConfigChanges) -> Mapping[str, str]:
    if not changes:
        return configs
    out = dict(configs)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _changed_entities(
    configs: Mapping[str, Mapping[str, str]], changes: dict[str, ConfigChanges]
) -> Mapping[str, Mapping[str, str]]:
    """Each broker's (or group's) configs with the changes; one left with none is dropped."""
    if not changes:
        return configs
    out = dict(configs)
    for entity, entity_changes in changes.items():
        updated = _changed(out.get(entity, {}), entity_changes)
        if updated:
            out[entity] = updated
        else:
            out.pop(entity, None)
    return out
