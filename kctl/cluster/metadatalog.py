"""The metadata log in words, for `kctl cluster metadata`: one line per record, saying what
changed in Kafka's vocabulary and who wrote it.

    #1 PartitionRecord payments/0 replicas [1,2,3] leader 1 ISR [1,2,3] by controller 1 (epoch 1)
    #9 PartitionChangeRecord payments/0 leader 1→2, leader epoch 0→1, ISR [1,2,3]→[2,3]
       by controller 2 (epoch 2)
    #10 PartitionChangeRecord payments/0 ISR [2,3]→[1,2,3] by leader 2 (AlterPartition)

A partition left with an ISR that does not contain its leader is flagged as an anomaly: the
leader of a partition is always in its own ISR, and a record breaking that (a deposed
leader's ISR change written under the new leader's epochs) lets the controller elect a
replica that lacks committed records.

    #10 PartitionChangeRecord payments/0 ISR [3]→[2] by leader 3 (AlterPartition)
        ANOMALY: ISR [2] leaves out leader 3

A record is told with the image as it was before it (old→new values come from there). Who
wrote it: a controller stamps its controller epoch, and the broker that held an epoch is
known once `controller.json` (or `fenced-controller.json`) has named it; a record without an
epoch that changes only the ISR is its leader's AlterPartition; other records without one are
config changes, which any broker writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from brokerd.dynamic_config import is_sensitive
from brokerd.metadata import records as r
from brokerd.metadata.image import MetadataImage
from brokerd.metadata.log import SNAPSHOT_LOADED
from brokerd.metadata.registration import PartitionRegistration

ARROW = "→"
HIDDEN = "(hidden)"
# PartitionChangeRecord fields as told, in this order; partition_epoch only when alone.
CHANGE_LABELS = {
    "replicas": "replicas",
    "leader": "leader",
    "leader_epoch": "leader epoch",
    "isr": "ISR",
    "adding_replicas": "adding replicas",
    "removing_replicas": "removing replicas",
}
ISR_ONLY = {"isr", "partition_epoch"}
_NOT_FIELDS = {"type", "topic", "partition", "offset", "controller_epoch", "time"}


def brokers(ids: list[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


def leader(broker_id: int) -> str:
    return "none" if broker_id < 0 else str(broker_id)


def short_id(topic_id: str) -> str:
    return topic_id[:8] + "…" if len(topic_id) > 8 else topic_id


def _value(name: str, value):
    if name == "leader":
        return leader(value)
    if isinstance(value, list):
        return brokers(value)
    return str(value)


def _unclean(election: dict | None) -> str:
    if election is None:
        return "last unclean election cleared"
    return (
        f"unclean election at leader epoch {election['leader_epoch']}, "
        f"bypassing ISR {brokers(election['isr'])}"
    )


def _partition_record(record: dict) -> str:
    text = (
        f"{record['topic']}/{record['partition']} replicas {brokers(record['replicas'])} "
        f"leader {leader(record['leader'])}"
    )
    if record.get("leader_epoch"):
        text += f" leader epoch {record['leader_epoch']}"
    text += f" ISR {brokers(record['isr'])}"
    for name in ("adding_replicas", "removing_replicas"):
        if record.get(name):
            text += f" {CHANGE_LABELS[name]} {brokers(record[name])}"
    if record.get("last_unclean_election"):
        text += f", {_unclean(record['last_unclean_election'])}"
    return text


def _partition_before(record: dict, image: MetadataImage) -> PartitionRegistration | None:
    topic = image.topics.get(record["topic"])
    return None if topic is None else topic.partitions.get(record["partition"])


def _partition_change(record: dict, image: MetadataImage) -> str:
    before = _partition_before(record, image)
    parts = []
    for name, label in CHANGE_LABELS.items():
        if name in record:
            new = _value(name, record[name])
            parts.append(
                f"{label} {new}"
                if before is None
                else f"{label} {_value(name, getattr(before, name))}{ARROW}{new}"
            )
    if "last_unclean_election" in record:
        parts.append(_unclean(record["last_unclean_election"]))
    if not parts and "partition_epoch" in record:
        old = "" if before is None else f"{before.partition_epoch}{ARROW}"
        parts.append(f"partition epoch {old}{record['partition_epoch']}")
    return f"{record['topic']}/{record['partition']} " + ", ".join(parts)


def _topic(record: dict, partitions_to_come: int | None) -> str:
    text = f"{record['name']} id {short_id(record['topic_id'])}:"
    if partitions_to_come is not None:
        text += f" {partitions_to_come} partition{'' if partitions_to_come == 1 else 's'} to come,"
    configs = record.get("configs") or {}
    if configs:
        text += " configs {" + ", ".join(f"{k}={v}" for k, v in sorted(configs.items())) + "}"
    else:
        text += " default configs"
    return text


def _remove_topic(record: dict, image: MetadataImage) -> str:
    topic = image.topics.get(record["name"])
    text = f"{record['name']} id {short_id(record['topic_id'])}: deleted"
    if topic is not None:
        count = len(topic.partitions)
        text += f" with its {count} partition{'' if count == 1 else 's'}"
    return text


def _config(record: dict, image: MetadataImage) -> str:
    kind, entity, name, value = (
        record["resource_type"],
        record["resource_name"],
        record["name"],
        record["value"],
    )
    if kind == r.TOPIC_RESOURCE:
        topic = image.topics.get(entity)
        configs = {} if topic is None else topic.configs
    else:
        configs = image.broker_configs.get(entity, {})
    old = configs.get(name)
    hidden = kind == r.BROKER_RESOURCE and is_sensitive(name)
    if hidden:
        old, value = (None if old is None else HIDDEN), (None if value is None else HIDDEN)
    if value is None:
        change = "removed" if old is None or hidden else f"removed (was {old})"
    elif old is None:
        change = f"set to {value}"
    elif hidden:
        change = f"changed {HIDDEN}"
    else:
        change = f"{old}{ARROW}{value}"
    return f"{kind} {entity} {name} {change}"


def describe(record: dict, image: MetadataImage, partitions_to_come: int | None = None) -> str:
    """What a record changes, told against ``image`` (the metadata as it was before the
    record): the record type and the change, without its offset and writer."""
    kind = record["type"]
    if kind == r.TOPIC:
        body = _topic(record, partitions_to_come)
    elif kind == r.PARTITION:
        body = _partition_record(record)
    elif kind == r.PARTITION_CHANGE:
        body = _partition_change(record, image)
    elif kind == r.REMOVE_TOPIC:
        body = _remove_topic(record, image)
    elif kind == r.CONFIG:
        body = _config(record, image)
    else:
        body = " ".join(f"{k}={v}" for k, v in sorted(record.items()) if k not in _NOT_FIELDS)
    return f"{kind} {body}".rstrip()


def is_isr_change(record: dict) -> bool:
    """A leader's AlterPartition: no controller epoch, only the ISR (and partition epoch)."""
    return (
        record["type"] == r.PARTITION_CHANGE
        and record.get("controller_epoch") is None
        and (record.keys() - _NOT_FIELDS) <= ISR_ONLY
        and "isr" in record
    )


def writer(record: dict, controllers: Mapping[int, int], isr_leader: int | None = None) -> str:
    """Who wrote the record: " by controller 3 (epoch 3)" (or "by the controller" while the
    epoch's holder is unknown), " by leader 2 (AlterPartition)", or "" for a config change."""
    epoch = record.get("controller_epoch")
    if epoch is not None:
        holder = controllers.get(epoch)
        who = "the controller" if holder is None else f"controller {holder}"
        return f" by {who} (epoch {epoch})"
    if is_isr_change(record):
        who = "the leader" if isr_leader is None or isr_leader < 0 else f"leader {isr_leader}"
        return f" by {who} (AlterPartition)"
    return ""


def isr_leader(record: dict, image: MetadataImage) -> int | None:
    """The leader whose ISR change ``record`` is (the image's leader: AlterPartition is a
    compare-and-set on its leader epoch, so no other broker could have written it)."""
    if not is_isr_change(record):
        return None
    before = _partition_before(record, image)
    return None if before is None else before.leader


def isr_anomaly(record: dict, image: MetadataImage) -> str | None:
    """What is wrong when a partition record leaves the partition with a leader outside its
    ISR (None when nothing is): ``image`` is the metadata as it was before the record."""
    if record["type"] == r.PARTITION:
        leader_id, isr = record["leader"], record["isr"]
    elif record["type"] == r.PARTITION_CHANGE:
        before = _partition_before(record, image)
        if before is None:
            return None
        leader_id, isr = record.get("leader", before.leader), record.get("isr", before.isr)
    else:
        return None
    if leader_id < 0 or leader_id in isr:
        return None
    return f"ISR {brokers(isr)} leaves out leader {leader_id}"


def flagged(anomaly: str | None) -> str:
    """The anomaly as a line ends with it."""
    return "" if anomaly is None else f" ANOMALY: {anomaly}"


def sentence(
    record: dict, image: MetadataImage, controllers: Mapping[int, int], partitions_to_come: int | None = None
) -> str:
    """The whole line for a record: offset, what it changes, who wrote it, and an anomaly."""
    return (
        f"#{record['offset']} {describe(record, image, partitions_to_come)}"
        f"{writer(record, controllers, isr_leader(record, image))}{flagged(isr_anomaly(record, image))}"
    )


def snapshot_sentence(
    offset: int, topics: int, partitions: int, unread: tuple[int, int] | None = None
) -> str:
    """A snapshot the reader started from: named, as in Kafka, by the offset after its last
    record. ``unread``: records the reader had not read yet that are only in it."""
    text = (
        f"snapshot at offset {offset + 1}: {topics} topic{'' if topics == 1 else 's'}, "
        f"{partitions} partition{'' if partitions == 1 else 's'}"
    )
    if unread is not None:
        text += f" (records #{unread[0]}–#{unread[1]} are only in it)"
    return text


def redacted(record: dict) -> dict:
    """The record as stored, with the value of a password (a sensitive broker config) hidden
    as DescribeConfigs hides it: null, and "sensitive": true."""
    if (
        record["type"] == r.CONFIG
        and record["resource_type"] == r.BROKER_RESOURCE
        and is_sensitive(record["name"])
        and record["value"] is not None
    ):
        return {**record, "value": None, "sensitive": True}
    return dict(record)


@dataclass
class Entry:
    """One line to print: the record (as stored, or the snapshot the reader loaded), what it
    changed, and who wrote it once that is known."""

    record: dict
    body: str | None  # None: a TopicRecord still counting the PartitionRecords after it
    isr_leader: int | None = None
    partitions_to_come: int = 0
    anomaly: str | None = None  # see isr_anomaly

    def line(self, controllers: Mapping[int, int]) -> str:
        if self.record["type"] == SNAPSHOT_LOADED:
            assert self.body is not None  # a snapshot's sentence is known once it is loaded
            return self.body
        return (
            f"#{self.record['offset']} {self.body}"
            f"{writer(self.record, controllers, self.isr_leader)}{flagged(self.anomaly)}"
        )

    def to_json(self, controllers: Mapping[int, int]) -> dict:
        document = {**redacted(self.record), "text": self.line(controllers)}
        if self.anomaly is not None:
            document["anomaly"] = self.anomaly
        return document


class Narrator:
    """An observer for ClusterView.follow_metadata that turns records into entries.

    Each record is told when it is observed (against the image before it). Who wrote it is
    added when the entry is taken, after the caller has learnt the controller epochs
    (`learn`), so a record written by a controller elected a moment ago is still named. A
    TopicRecord's line waits for the PartitionRecords after it, to count them: until another
    record comes, or the caller says the log is quiet (`take(final=True)`).
    """

    def __init__(self) -> None:
        self.controllers: dict[int, int] = {}  # controller epoch -> the broker that held it
        self.observed = 0  # records and snapshots told so far
        self._entries: list[Entry] = []
        self._topic: Entry | None = None  # the TopicRecord whose partitions are being counted
        self._last_offset: int | None = None

    def __call__(self, record: dict, image: MetadataImage) -> None:
        self.observed += 1
        kind = record["type"]
        if kind == SNAPSHOT_LOADED:
            self._close_topic()
            unread = None
            if self._last_offset is not None and self._last_offset < record["offset"]:
                unread = (self._last_offset + 1, record["offset"])
            partitions = sum(len(t.partitions) for t in image.topics.values())
            record = {**record, "topics": len(image.topics), "partitions": partitions}
            self._entries.append(
                Entry(record, snapshot_sentence(record["offset"], len(image.topics), partitions, unread))
            )
            self._last_offset = record["offset"]
            return
        self._last_offset = record["offset"]
        if kind == r.PARTITION and self._topic is not None and record["topic"] == self._topic.record["name"]:
            self._topic.partitions_to_come += 1
        else:
            self._close_topic()
        if kind == r.TOPIC:
            self._topic = Entry(record, None)
            self._entries.append(self._topic)
            return
        self._entries.append(
            Entry(
                record,
                describe(record, image),
                isr_leader(record, image),
                anomaly=isr_anomaly(record, image),
            )
        )

    def _close_topic(self) -> None:
        if self._topic is not None:
            self._topic.body = describe(self._topic.record, MetadataImage(), self._topic.partitions_to_come)
            self._topic = None

    def learn(self, controller: tuple[int, int] | dict | None) -> None:
        """Remember which broker held a controller epoch: (broker, epoch) as
        ClusterView.controller() gives it, or a fenced controller's {"broker_id", "epoch"}."""
        if isinstance(controller, dict):
            controller = (controller["broker_id"], controller["epoch"])
        if controller is not None:
            broker_id, epoch = controller
            self.controllers[epoch] = broker_id

    def take(self, final: bool = False) -> list[Entry]:
        """The entries ready to print, oldest first; with ``final`` a TopicRecord still
        counting its partitions is closed first."""
        if final:
            self._close_topic()
        ready = next((i for i, e in enumerate(self._entries) if e.body is None), len(self._entries))
        taken, self._entries = self._entries[:ready], self._entries[ready:]
        return taken
