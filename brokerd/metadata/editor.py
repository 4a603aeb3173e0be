"""Turning a decision into metadata records: the topics as a writer sees them while it
decides (copies, made on first touch), and the records of what it changed at the end.

Only the topics a decision touches are copied and compared, so creating one topic, or moving
one partition's leader, costs the same in a cluster of ten topics or ten thousand.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from brokerd.metadata import records as r
from brokerd.metadata.image import MetadataImage, PartitionRecord, TopicRecord


class TopicsEditor(MutableMapping):
    def __init__(self, image: MetadataImage):
        self._image = image
        self._touched: dict[str, TopicRecord | None] = {}  # None: deleted

    def __getitem__(self, name: str) -> TopicRecord:
        if name in self._touched:
            topic = self._touched[name]
            if topic is None:
                raise KeyError(name)
            return topic
        topic = self._image.topics[name].clone()
        self._touched[name] = topic
        return topic

    def __setitem__(self, name: str, topic: TopicRecord) -> None:
        self._touched[name] = topic

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._touched[name] = None

    def __contains__(self, name: object) -> bool:
        if name in self._touched:
            return self._touched[name] is not None
        return name in self._image.topics

    def __iter__(self) -> Iterator[str]:
        names = dict.fromkeys(self._image.topics)
        names.update(dict.fromkeys(self._touched))
        return (name for name in names if name in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @property
    def image_topics(self) -> dict[str, TopicRecord]:
        """The topics as they were before this decision (read only: for counting)."""
        return self._image.topics

    def records(self) -> list[dict]:
        """The metadata records that turn the image into what the decision left."""
        out: list[dict] = []
        for name, topic in self._touched.items():
            before = self._image.topics.get(name)
            if topic is None or (before is not None and before.topic_id != topic.topic_id):
                if before is not None:
                    out.append({"type": r.REMOVE_TOPIC, "name": name, "topic_id": before.topic_id})
                    before = None
            if topic is None:
                continue
            if before is None:
                out += topic_records(topic)
                continue
            out += config_records(r.TOPIC_RESOURCE, name, before.configs, topic.configs)
            for index, partition in topic.partitions.items():
                old = before.partitions.get(index)
                if old is None:
                    out.append(partition_record(name, partition))
                else:
                    changes = partition.changes_from(old)
                    if changes:
                        out.append({"type": r.PARTITION_CHANGE, "topic": name, "partition": index, **changes})
        return out


def topic_records(topic: TopicRecord) -> list[dict]:
    """A new topic: its TopicRecord (with its configs) and one PartitionRecord each."""
    return [
        {"type": r.TOPIC, "name": topic.name, "topic_id": topic.topic_id, "configs": dict(topic.configs)}
    ] + [partition_record(topic.name, p) for p in topic.partitions.values()]


def partition_record(topic: str, partition: PartitionRecord) -> dict:
    return {
        "type": r.PARTITION,
        "topic": topic,
        "partition": partition.partition,
        **{name: value for name, value in vars(partition).items() if name != "partition"},
    }


def config_records(
    resource_type: str, resource_name: str, before: dict[str, str], after: dict[str, str]
) -> list[dict]:
    """A ConfigRecord per config set, changed or removed (value None)."""
    return [
        {
            "type": r.CONFIG,
            "resource_type": resource_type,
            "resource_name": resource_name,
            "name": name,
            "value": after.get(name),
        }
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    ]
