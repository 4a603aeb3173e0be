"""The metadata image: what the cluster metadata says now, built by applying the records of
the metadata log in order (KRaft's MetadataImage), and the delta of one catch-up (which
partitions, topics and configs the new records touched; KRaft's MetadataDelta).

Applying a record costs O(1) (a topic's creation or removal: its partitions), so a broker
that follows the log pays for what changed, never for the size of the cluster.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from brokerd.metadata import records as r

PARTITION_FIELDS = (
    "replicas",
    "leader",
    "leader_epoch",
    "isr",
    "partition_epoch",
    "adding_replicas",
    "removing_replicas",
    "last_unclean_election",
    "last_leader_rebalance",
)


@dataclass
class PartitionRecord:
    partition: int
    replicas: list[int]
    leader: int = -1
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    partition_epoch: int = 0
    adding_replicas: list[int] = field(default_factory=list)  # an ongoing reassignment's
    removing_replicas: list[int] = field(default_factory=list)
    # the controller's last unclean election here: {"leader_epoch", "isr"} (the ISR it bypassed)
    last_unclean_election: dict | None = None
    # the controller's last move back to the preferred leader here on its imbalance check:
    # {"leader_epoch", "led", "preferred", "percentage"} (the broker's imbalance that moved it)
    last_leader_rebalance: dict | None = None

    def clone(self) -> PartitionRecord:
        return PartitionRecord(
            self.partition,
            list(self.replicas),
            self.leader,
            self.leader_epoch,
            list(self.isr),
            self.partition_epoch,
            list(self.adding_replicas),
            list(self.removing_replicas),
            _copy(self.last_unclean_election),
            _copy(self.last_leader_rebalance),
        )

    def changes_from(self, before: PartitionRecord) -> dict:
        """The fields that differ from ``before`` (a PartitionChangeRecord's payload)."""
        return {
            name: getattr(self, name)
            for name in PARTITION_FIELDS
            if getattr(self, name) != getattr(before, name)
        }


def _copy(reason: dict | None) -> dict | None:
    return None if reason is None else dict(reason)


@dataclass
class TopicRecord:
    name: str
    topic_id: str
    configs: dict[str, str]
    partitions: dict[int, PartitionRecord]

    def clone(self) -> TopicRecord:
        return TopicRecord(
            self.name,
            self.topic_id,
            dict(self.configs),
            {p: record.clone() for p, record in self.partitions.items()},
        )

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "topic_id": self.topic_id,
            "configs": self.configs,
            "partitions": {str(p): asdict(rec) for p, rec in self.partitions.items()},
        }

    @classmethod
    def from_json(cls, doc: dict) -> TopicRecord:
        parts = {int(p): PartitionRecord(**rec) for p, rec in doc["partitions"].items()}
        return cls(doc["name"], doc["topic_id"], dict(doc["configs"]), parts)


@dataclass
class MetadataDelta:
    """What the records applied since the last `take` changed; ``full`` when the image was
    rebuilt from a snapshot (everything may have changed)."""

    partitions: set[tuple[str, int]] = field(default_factory=set)
    created_topics: set[str] = field(default_factory=set)
    removed_topics: set[str] = field(default_factory=set)
    topic_configs: set[str] = field(default_factory=set)
    broker_configs: bool = False
    full: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.partitions
            or self.created_topics
            or self.removed_topics
            or self.topic_configs
            or self.broker_configs
            or self.full
        )

    def merge(self, other: MetadataDelta) -> None:
        self.partitions |= other.partitions
        self.created_topics |= other.created_topics
        self.removed_topics |= other.removed_topics
        self.topic_configs |= other.topic_configs
        self.broker_configs |= other.broker_configs
        self.full |= other.full


class MetadataImage:
    def __init__(self) -> None:
        self.offset = -1  # of the last record applied
        self.topics: dict[str, TopicRecord] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}  # "<id>" or "<default>"
        self.group_configs: dict[str, dict[str, str]] = {}  # group id -> its dynamic configs
        self.delta = MetadataDelta(full=True)

    def take_delta(self) -> MetadataDelta:
        delta, self.delta = self.delta, MetadataDelta()
        return delta

    def apply(self, record: dict) -> None:
        if record["offset"] <= self.offset:
            return  # already in the snapshot this image started from
        self.offset = record["offset"]
        kind = record["type"]
        if kind == r.TOPIC:
            self.topics[record["name"]] = TopicRecord(
                record["name"], record["topic_id"], dict(record["configs"]), {}
            )
            self.delta.created_topics.add(record["name"])
            self.delta.removed_topics.discard(record["name"])
        elif kind == r.PARTITION:
            fields = {name: record[name] for name in PARTITION_FIELDS if name in record}
            self.topics[record["topic"]].partitions[record["partition"]] = PartitionRecord(
                record["partition"], **fields
            )
            self.delta.partitions.add((record["topic"], record["partition"]))
        elif kind == r.PARTITION_CHANGE:
            partition = self.topics[record["topic"]].partitions[record["partition"]]
            for name in PARTITION_FIELDS:
                if name in record:
                    setattr(partition, name, record[name])
            self.delta.partitions.add((record["topic"], record["partition"]))
        elif kind == r.REMOVE_TOPIC:
            self.topics.pop(record["name"], None)
            self.delta.removed_topics.add(record["name"])
        elif kind == r.CONFIG:
            self._apply_config(record)

    def _apply_config(self, record: dict) -> None:
        if record["resource_type"] == r.TOPIC_RESOURCE:
            configs = self.topics[record["resource_name"]].configs
            self.delta.topic_configs.add(record["resource_name"])
        elif record["resource_type"] == r.GROUP_RESOURCE:
            configs = self.group_configs.setdefault(record["resource_name"], {})
        else:
            configs = self.broker_configs.setdefault(record["resource_name"], {})
            self.delta.broker_configs = True
        if record["value"] is None:
            configs.pop(record["name"], None)
        else:
            configs[record["name"]] = record["value"]
        if record["resource_type"] == r.BROKER_RESOURCE and not configs:
            del self.broker_configs[record["resource_name"]]
        if record["resource_type"] == r.GROUP_RESOURCE and not configs:
            del self.group_configs[record["resource_name"]]

    # -- snapshots ------------------------------------------------------------------------
    def to_snapshot(self) -> dict:
        return {
            "offset": self.offset,
            "topics": [t.to_json() for t in self.topics.values()],
            "broker_configs": self.broker_configs,
            "group_configs": self.group_configs,
        }

    @classmethod
    def from_snapshot(cls, doc: dict) -> MetadataImage:
        image = cls()
        image.offset = doc["offset"]
        image.topics = {t["name"]: TopicRecord.from_json(t) for t in doc["topics"]}
        image.broker_configs = {e: dict(c) for e, c in doc["broker_configs"].items()}
        image.group_configs = {g: dict(c) for g, c in doc.get("group_configs", {}).items()}
        return image
