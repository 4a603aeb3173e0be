"""Turning a decision into metadata records: the topics as a writer sees them while it
decides, and the records of what it changed at the end.

The image is never changed: a writer sets whole topics (a new one, or one with new configs)
or single partitions, and only those are compared with the image at the end. So creating one
topic, or moving one partition's leader, costs the same in a cluster of ten topics or ten
thousand, and moving every leader of a topic of ten thousand partitions copies none of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from brokerd.metadata import records as r
from brokerd.metadata.image import MetadataImage, TopicImage
from brokerd.metadata.registration import PartitionRegistration


class TopicsEditor(Mapping[str, TopicImage]):
    def __init__(self, image: MetadataImage):
        self._image = image.topics
        self._topics: dict[str, TopicImage | None] = {}  # set whole (None: deleted)
        self._partitions: dict[str, dict[int, PartitionRegistration]] = {}  # set one by one

    def __getitem__(self, name: str) -> TopicImage:
        topic = self._topics[name] if name in self._topics else self._image[name]
        if topic is None:
            raise KeyError(name)
        return self._fold(name, topic) if name in self._partitions else topic

    def _fold(self, name: str, topic: TopicImage) -> TopicImage:
        """The topic with the partitions set one by one, set whole from now on."""
        changed = self._partitions.pop(name)
        folded = self._topics[name] = replace(topic, partitions={**topic.partitions, **changed})
        return folded

    def __setitem__(self, name: str, topic: TopicImage) -> None:
        """A new topic, or a topic changed as a whole (its configs)."""
        self._partitions.pop(name, None)
        self._topics[name] = topic

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._partitions.pop(name, None)
        self._topics[name] = None

    def __contains__(self, name: object) -> bool:
        if name in self._topics:
            return self._topics[name] is not None
        return name in self._image

    def __iter__(self) -> Iterator[str]:
        names = dict.fromkeys(self._image)
        names.update(dict.fromkeys(self._topics))
        return (name for name in names if name in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def partition(self, topic: str, index: int) -> PartitionRegistration | None:
        """One partition as the decision left it so far (None: no such partition)."""
        changed = self._partitions.get(topic, {}).get(index)
        if changed is not None:
            return changed
        found = self._topics[topic] if topic in self._topics else self._image.get(topic)
        return None if found is None else found.partitions.get(index)  # not folded: O(1)

    def set_partition(self, topic: str, registration: PartitionRegistration) -> None:
        """A partition of an existing topic, new or changed."""
        if topic not in self:
            raise KeyError(topic)
        self._partitions.setdefault(topic, {})[registration.partition] = registration

    @property
    def image_topics(self) -> Mapping[str, TopicImage]:
        """The topics as they were before this decision (for counting)."""
        return self._image

    def records(self) -> list[r.MetadataRecord]:
        """The metadata records that turn the image into what the decision left."""
        for name, topic in list(self._topics.items()):
            if topic is not None and name in self._partitions:
                self._fold(name, topic)
        out: list[r.MetadataRecord | None] = []
        for name, topic in self._topics.items():
            out += _topic_changes(self._image.get(name), name, topic)
        for name, partitions in self._partitions.items():
            before = self._image[name].partitions
            out += [partition_change(name, before.get(p.partition), p) for p in partitions.values()]
        return [record for record in out if record is not None]


def _topic_changes(
    before: TopicImage | None, name: str, topic: TopicImage | None
) -> list[r.MetadataRecord | None]:
    out: list[r.MetadataRecord | None] = []
    if before is not None and (topic is None or before.topic_id != topic.topic_id):
        out.append(r.RemoveTopicRecord(name, before.topic_id))
        before = None
    if topic is None:
        return out
    if before is None:
        return out + list(topic_records(topic))
    out += config_records(r.TOPIC_RESOURCE, name, before.configs, topic.configs)
    out += [partition_change(name, before.partitions.get(p), new) for p, new in topic.partitions.items()]
    return out


def partition_change(
    topic: str, before: PartitionRegistration | None, after: PartitionRegistration
) -> r.PartitionRecord | r.PartitionChangeRecord | None:
    """A PartitionRecord for a new partition, a PartitionChangeRecord of the fields that
    changed, or None when none did."""
    if before is None:
        return r.PartitionRecord(topic, after)
    if after is before:
        return None
    changes = after.changes_from(before)
    return r.PartitionChangeRecord(topic, after.partition, **changes) if changes else None


def topic_records(topic: TopicImage) -> list[r.MetadataRecord]:
    """A new topic: its TopicRecord (with its configs) and one PartitionRecord each."""
    out: list[r.MetadataRecord] = [r.TopicRecord(topic.name, topic.topic_id, dict(topic.configs))]
    return out + [r.PartitionRecord(topic.name, p) for p in topic.partitions.values()]


def config_records(
    resource_type: str, resource_name: str, before: Mapping[str, str], after: Mapping[str, str]
) -> list[r.MetadataRecord]:
    """A ConfigRecord per config set, changed or removed (value None)."""
    return [
        r.ConfigRecord(resource_type, resource_name, name, after.get(name))
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    ]
