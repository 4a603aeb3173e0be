"""An ISR without its leader is flagged as an anomaly where a class looks: in the metadata
log as `kctl cluster metadata` tells it, and in the narration under `kctl watch`. Both
in-process, from records and snapshots built here."""

from __future__ import annotations

import pytest

from brokerd.metadata import records as r
from brokerd.metadata.editor import topic_records
from brokerd.metadata.image import MetadataImage
from kctl.cluster.metadatalog import Narrator, sentence
from kctl.watch.events import changes
from tests.kctl.test_cluster_metadata import applied, change, image_of, numbered, payments, told
from tests.kctl.test_watch_events import snap

pytestmark = pytest.mark.unit


@pytest.fixture
def created() -> list[dict]:
    """payments/0, /1, /2 led by brokers 1, 2, 3, created by controller 3: offsets 0-3."""
    return numbered(topic_records(payments()), controller_epoch=3)


def test_the_metadata_log_flags_an_isr_change_that_leaves_out_the_leader(created):
    """The issue's record #10: leader 3's partition gets ISR [2], written as an AlterPartition."""
    moved = change(4, 3, partition=0, leader=3, leader_epoch=1, isr=[3], partition_epoch=1)
    zombie = change(5, None, partition=0, isr=[2], partition_epoch=2)
    image = image_of(created + [moved])
    assert sentence(zombie, image, {3: 3}) == (
        "#5 PartitionChangeRecord payments/0 ISR [3]→[2] by leader 3 (AlterPartition) "
        "ANOMALY: ISR [2] leaves out leader 3"
    )
    assert "ANOMALY" not in sentence(moved, image_of(created), {3: 3})
    lines = told(created + [moved, zombie], {3: 3})
    assert [line for line in lines if "ANOMALY" in line] == [sentence(zombie, image, {3: 3})]


def test_the_metadata_log_in_json_names_the_anomaly(created):
    zombie = change(4, None, partition=0, isr=[2], partition_epoch=1)  # payments/0 is led by 1
    narrator = Narrator()
    image = MetadataImage()
    for record in created + [zombie]:
        narrator(record, image)
        image = applied(image, record)
    documents = [entry.to_json({}) for entry in narrator.take(final=True)]
    assert [d.get("anomaly") for d in documents if d["type"] == r.PARTITION_CHANGE] == [
        "ISR [2] leaves out leader 1"
    ]


def test_watch_flags_an_isr_without_its_leader_once():
    before = snap(leader=3, epoch=2, isr=(3,))
    after = snap(leader=3, epoch=2, isr=(2,))
    assert changes(before, after) == [
        "demo/0: ISR changed to [2]",
        "demo/0: ANOMALY: ISR [2] leaves out leader 3",
    ]
    assert changes(after, after) == []
    assert changes(snap(), snap(leader=-1, epoch=1, isr=(1,))) == [
        "demo/0: leader 1 -> none, epoch 0 -> 1",
        "demo/0: ISR shrank to [1]",
    ]  # an offline partition has no leader to leave out
