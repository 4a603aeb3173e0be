"""`kctl cluster metadata`'s sentences: the metadata log told record by record, checked
in-process against images built from records (the command itself: tests/cluster/cli)."""

import json

import pytest

from brokerd.metadata import records as r
from brokerd.metadata.editor import topic_records
from brokerd.metadata.image import MetadataDelta, MetadataImage, TopicImage
from brokerd.metadata.log import MetadataLog
from brokerd.metadata.records import LogEntry, PartitionChangeRecord
from brokerd.metadata.registration import PartitionRegistration
from kctl.cluster.metadatalog import Narrator, sentence

pytestmark = pytest.mark.unit

TOPIC_ID = "3f9a2b7c0d1e4f5a6b7c8d9e0f1a2b3c"


def payments(configs=None) -> TopicImage:
    return TopicImage(
        "payments",
        TOPIC_ID,
        dict(configs or {}),
        {p: PartitionRegistration(p, [1, 2, 3], leader=p + 1, isr=[1, 2, 3]) for p in range(3)},
    )


def numbered(records, first=0, controller_epoch=1):
    """The records as the log stores them, from offset ``first``."""
    return [
        LogEntry(offset, controller_epoch, 0.0, record).to_json()
        for offset, record in enumerate(records, start=first)
    ]


def applied(image: MetadataImage, record: dict) -> MetadataImage:
    """The image after one record, as stored (a time is added to those built here)."""
    delta = MetadataDelta(image)
    delta.replay(LogEntry.from_json({"time": 0.0, **record}))
    return delta.apply()


def image_of(records) -> MetadataImage:
    image = MetadataImage()
    for record in records:
        image = applied(image, record)
    return image


def told(records, controllers=None, final=True) -> list[str]:
    """The lines a Narrator tells for ``records`` applied in order from an empty image."""
    narrator = Narrator()
    narrator.controllers.update(controllers or {})
    image = MetadataImage()
    for record in records:
        narrator(record, image)
        image = applied(image, record)
    return [e.line(narrator.controllers) for e in narrator.take(final)]


@pytest.fixture
def created():
    """payments (3 partitions, leaders 1, 2, 3) created by controller 3 at epoch 3: offsets 0-3."""
    return numbered(topic_records(payments({"min.insync.replicas": "2"})), controller_epoch=3)


def change(offset, controller_epoch, partition=2, **fields):
    return {
        "type": r.PARTITION_CHANGE,
        "topic": "payments",
        "partition": partition,
        "offset": offset,
        "controller_epoch": controller_epoch,
        **fields,
    }


# -- sentences ---------------------------------------------------------------------------------
def test_a_controller_moves_a_leader(created):
    image = image_of(created)
    image.topics["payments"].partitions[2] = PartitionRegistration(2, [1, 2, 3], 3, 1, [2, 3], 4)
    record = change(3012, 3, leader=2, leader_epoch=2, isr=[2], partition_epoch=5)
    assert sentence(record, image, {3: 3}) == (
        "#3012 PartitionChangeRecord payments/2 leader 3→2, leader epoch 1→2, ISR [2,3]→[2] "
        "by controller 3 (epoch 3)"
    )
    assert sentence(record, image, {}).endswith("by the controller (epoch 3)")  # holder unknown


def test_a_leader_changes_its_isr(created):
    image = image_of(created)
    image.topics["payments"].partitions[2] = PartitionRegistration(2, [1, 2, 3], 2, 2, [2], 5)
    record = change(3013, None, isr=[2, 3], partition_epoch=6)
    assert sentence(record, image, {}) == (
        "#3013 PartitionChangeRecord payments/2 ISR [2]→[2,3] by leader 2 (AlterPartition)"
    )


def test_a_new_topic_counts_the_partitions_after_it(created):
    assert told(created, {3: 3}) == [
        "#0 TopicRecord payments id 3f9a2b7c…: 3 partitions to come, configs {min.insync.replicas=2} "
        "by controller 3 (epoch 3)",
        "#1 PartitionRecord payments/0 replicas [1,2,3] leader 1 ISR [1,2,3] by controller 3 (epoch 3)",
        "#2 PartitionRecord payments/1 replicas [1,2,3] leader 2 ISR [1,2,3] by controller 3 (epoch 3)",
        "#3 PartitionRecord payments/2 replicas [1,2,3] leader 3 ISR [1,2,3] by controller 3 (epoch 3)",
    ]


def test_a_topic_line_waits_until_its_partitions_are_counted(created):
    narrator = Narrator()
    image = MetadataImage()
    for record in created[:2]:
        narrator(record, image)
        image = applied(image, record)
    assert narrator.take() == []  # more PartitionRecords may follow
    for record in created[2:]:
        narrator(record, image)
        image = applied(image, record)
    narrator(change(4, 3, leader=1), image)  # another record: the topic is complete
    lines = [e.line({}) for e in narrator.take()]
    assert len(lines) == 5 and "3 partitions to come" in lines[0]


def test_unclean_election_and_reassignment(created):
    image = image_of(created)
    record = change(
        4,
        3,
        leader=2,
        leader_epoch=1,
        isr=[2],
        partition_epoch=1,
        last_unclean_election={"leader_epoch": 1, "isr": [3]},
    )
    assert sentence(record, image, {3: 3}) == (
        "#4 PartitionChangeRecord payments/2 leader 3→2, leader epoch 0→1, ISR [1,2,3]→[2], "
        "unclean election at leader epoch 1, bypassing ISR [3] by controller 3 (epoch 3)"
    )
    moving = change(
        5,
        3,
        partition=0,
        replicas=[1, 2, 3, 4],
        adding_replicas=[4],
        removing_replicas=[1],
        partition_epoch=1,
    )
    assert sentence(moving, image, {}) == (
        "#5 PartitionChangeRecord payments/0 replicas [1,2,3]→[1,2,3,4], adding replicas []→[4], "
        "removing replicas []→[1] by the controller (epoch 3)"
    )
    offline = change(6, 3, partition=0, leader=-1, leader_epoch=1, partition_epoch=1)
    assert "leader 1→none, leader epoch 0→1" in sentence(offline, image, {})


def test_a_deleted_topic(created):
    record = {
        "type": r.REMOVE_TOPIC,
        "name": "payments",
        "topic_id": TOPIC_ID,
        "offset": 9,
        "controller_epoch": 4,
    }
    assert sentence(record, image_of(created), {4: 1}) == (
        "#9 RemoveTopicRecord payments id 3f9a2b7c…: deleted with its 3 partitions by controller 1 (epoch 4)"
    )


def config(offset, resource_type, resource_name, name, value):
    return {
        "type": r.CONFIG,
        "resource_type": resource_type,
        "resource_name": resource_name,
        "name": name,
        "value": value,
        "offset": offset,
        "controller_epoch": None,
    }


def test_config_changes_are_told_old_to_new(created):
    records = created + [
        config(4, r.TOPIC_RESOURCE, "payments", "retention.ms", "604800000"),
        config(5, r.TOPIC_RESOURCE, "payments", "retention.ms", "1000"),
        config(6, r.BROKER_RESOURCE, "<default>", "log.retention.ms", "5000"),
        config(7, r.BROKER_RESOURCE, "<default>", "log.retention.ms", None),
        config(8, r.BROKER_RESOURCE, "2", "ssl.key.password", "secret"),
    ]
    assert told(records)[4:] == [
        "#4 ConfigRecord TOPIC payments retention.ms set to 604800000",
        "#5 ConfigRecord TOPIC payments retention.ms 604800000→1000",
        "#6 ConfigRecord BROKER <default> log.retention.ms set to 5000",
        "#7 ConfigRecord BROKER <default> log.retention.ms removed (was 5000)",
        "#8 ConfigRecord BROKER 2 ssl.key.password set to (hidden)",
    ]


def test_json_hides_passwords_as_describe_configs_does():
    narrator = Narrator()
    narrator(config(0, r.BROKER_RESOURCE, "2", "ssl.key.password", "secret"), MetadataImage())
    doc = narrator.take()[0].to_json({})
    assert doc["value"] is None and doc["sensitive"] is True and "secret" not in json.dumps(doc)
    assert doc["text"] == "#0 ConfigRecord BROKER 2 ssl.key.password set to (hidden)"


def test_a_snapshot_and_the_records_only_in_it(tmp_path):
    """A reader that falls behind a snapshot (its segment deleted) says which records it
    only knows through the snapshot."""
    writer = MetadataLog(tmp_path)
    writer.create()
    writer.append(topic_records(payments()), 1)
    narrator = Narrator()
    reader = MetadataLog(tmp_path, narrator)
    reader.catch_up()
    assert len(narrator.take(final=True)) == 4
    writer.append(
        [PartitionChangeRecord("payments", 2, leader=2), PartitionChangeRecord("payments", 2, leader=1)], 1
    )
    writer.snapshot()
    writer.append([PartitionChangeRecord("payments", 0, leader=2)], 1)
    reader.catch_up()
    lines = [e.line({1: 1}) for e in narrator.take(final=True)]
    assert lines == [
        "snapshot at offset 6: 1 topic, 3 partitions (records #4–#5 are only in it)",
        "#6 PartitionChangeRecord payments/0 leader 1→2 by controller 1 (epoch 1)",
    ]

    fresh = Narrator()
    MetadataLog(tmp_path, fresh).catch_up()
    assert fresh.take()[0].to_json({}) == {
        "type": "SnapshotLoaded",
        "offset": 5,
        "topics": 1,
        "partitions": 3,
        "text": "snapshot at offset 6: 1 topic, 3 partitions",
    }
