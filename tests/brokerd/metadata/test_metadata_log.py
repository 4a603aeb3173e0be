"""The metadata log's guarantees: records applied in order by every reader, a torn tail never
applied and cut off by the next writer, snapshots that bound replay, deltas that name only
what changed, and an old whole-file metadata.json upgraded into the log."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import pytest

from brokerd.metadata import log as metadata_log
from brokerd.metadata.image import TopicImage
from brokerd.metadata.registration import PartitionRegistration
from brokerd.state import ClusterState

pytestmark = pytest.mark.unit


@pytest.fixture
def state(tmp_path):
    cs = ClusterState(tmp_path)
    cs.initialize({1: 9001, 2: 9002})
    return cs


def make_topic(state: ClusterState, epoch: int, name: str, partitions: int = 2) -> None:
    with state.update_topics(epoch) as topics:
        topics[name] = TopicImage(
            name,
            f"id-{name}",
            {"retention.ms": "1000"},
            {p: PartitionRegistration(p, [1, 2], 1, 0, [1, 2]) for p in range(partitions)},
        )


def segment_files(state: ClusterState) -> list[str]:
    return sorted(p.name for p in (state.dir / "metadata").iterdir())


def test_another_reader_sees_every_change_and_only_the_change(state):
    epoch = state.claim_controller(1, lambda b: False)
    reader = ClusterState(state.cluster_dir)
    make_topic(state, epoch, "a")
    assert reader.take_metadata_delta().full
    assert set(reader.topics()) == {"a"}
    state.alter_isr("a", 1, leader_epoch=0, partition_epoch=0, isr=[1])
    with state.update_topic_configs() as topics:
        topics["a"] = replace(topics["a"], configs={"retention.ms": "2000"})
    delta = reader.take_metadata_delta()
    assert delta.partitions == {("a", 1)} and delta.topic_configs == {"a"} and not delta.full
    assert reader.topics()["a"].partitions[1].isr == [1]
    assert reader.topics()["a"].configs == {"retention.ms": "2000"}
    assert not reader.take_metadata_delta()


def test_records_name_what_changed_with_the_controller_epoch(state):
    epoch = state.claim_controller(1, lambda b: False)
    make_topic(state, epoch, "a", partitions=1)
    with state.update_topics(epoch) as topics:
        topics.set_partition("a", replace(topics["a"].partitions[0], leader=2, leader_epoch=1))
    with state.update_topics(epoch) as topics:
        del topics["a"]
    data = b"".join(p.read_bytes() for p in sorted((state.dir / "metadata").glob("*.log")))
    from brokerd.metadata.records import decode

    records, _ = decode(data)
    assert [r["type"] for r in records] == [
        "TopicRecord",
        "PartitionRecord",
        "PartitionChangeRecord",
        "RemoveTopicRecord",
    ]
    assert records[2]["leader"] == 2 and records[2]["leader_epoch"] == 1
    assert "isr" not in records[2]
    assert {r["controller_epoch"] for r in records} == {epoch}
    assert [r["offset"] for r in records] == [0, 1, 2, 3]


def test_a_torn_tail_is_never_applied_and_the_next_writer_cuts_it_off(state):
    epoch = state.claim_controller(1, lambda b: False)
    make_topic(state, epoch, "a")
    segment = next((state.dir / "metadata").glob("*.log"))
    whole = segment.read_bytes()
    with open(segment, "ab") as file:
        file.write(b"\x00\x00\x01\x00\xde\xad")  # a frame header promising bytes never written
    assert set(ClusterState(state.cluster_dir).topics()) == {"a"}
    make_topic(state, epoch, "b")
    assert segment.read_bytes().startswith(whole)
    fresh = ClusterState(state.cluster_dir)
    assert set(fresh.topics()) == {"a", "b"}
    assert fresh.metadata_image().offset == 5


def test_a_corrupt_frame_ends_what_readers_apply(state):
    epoch = state.claim_controller(1, lambda b: False)
    make_topic(state, epoch, "a", partitions=1)
    segment = next((state.dir / "metadata").glob("*.log"))
    data = bytearray(segment.read_bytes())
    data[-3] ^= 0xFF  # inside the last record's payload: its CRC no longer matches
    segment.write_bytes(bytes(data))
    image = ClusterState(state.cluster_dir).metadata_image()
    assert image.offset == 0 and image.topics["a"].partitions == {}


def test_snapshots_bound_replay_and_old_segments_go(state, monkeypatch):
    monkeypatch.setattr(metadata_log, "SNAPSHOT_RECORDS", 10)
    epoch = state.claim_controller(1, lambda b: False)
    follower = ClusterState(state.cluster_dir)
    make_topic(state, epoch, "a", partitions=3)
    follower.topics()
    for round_ in range(8):
        state.alter_isr("a", 0, leader_epoch=0, partition_epoch=round_, isr=[1, 2][: 1 + round_ % 2])
    files = segment_files(state)
    assert any(f.endswith(".checkpoint") for f in files)
    assert files[0] != "00000000000000000000.log"  # the first segment was deleted
    for reader in (ClusterState(state.cluster_dir), follower):  # new, and one left behind
        image = reader.metadata_image()
        assert image.offset == 11 and image.topics["a"].partitions[0].partition_epoch == 8
        assert image.topics["a"].partitions[0].isr == [1, 2]


def test_an_empty_log_gives_one_full_delta_then_none(state):
    reader = ClusterState(state.cluster_dir, member=1)
    assert reader.take_metadata_delta().full
    assert not reader.take_metadata_delta() and not reader.take_metadata_delta()


def backdate(directory, seconds: float) -> int:
    """Set a directory's mtime `seconds` into the past; returns it (ns)."""
    mtime = time.time_ns() - int(seconds * 1e9)
    os.utime(directory, ns=(mtime, mtime))
    return mtime


@pytest.mark.parametrize("settled", [True, False])
def test_a_reader_between_listings_sees_new_segments_and_appends(state, monkeypatch, settled):
    """A reader skips listing the log's directory while its mtime and the segment's size are
    as it left them. A listing made while the mtime was fresh is not trusted: a segment
    created in the same clock tick would leave the mtime as it was."""
    monkeypatch.setattr(metadata_log, "SNAPSHOT_RECORDS", 4)
    epoch = state.claim_controller(1, lambda b: False)
    log_dir = state.dir / "metadata"
    reader = ClusterState(state.cluster_dir)
    listed = backdate(log_dir, 5 if settled else 0)
    assert reader.metadata_image().offset == -1  # nothing written yet
    make_topic(state, epoch, "a", partitions=1)  # the first segment
    if not settled:  # as if it fell in the clock tick of the reader's listing
        os.utime(log_dir, ns=(listed, listed))
    assert reader.metadata_image().offset == 1
    state.alter_isr("a", 0, leader_epoch=0, partition_epoch=0, isr=[1])
    assert reader.metadata_image().offset == 2  # appended to the segment it reads
    for round_ in range(1, 4):  # past SNAPSHOT_RECORDS: a new segment, the old one deleted
        state.alter_isr("a", 0, leader_epoch=0, partition_epoch=round_, isr=[1, 2][: 1 + round_ % 2])
    assert not (log_dir / "00000000000000000000.log").exists()
    image = reader.metadata_image()
    assert image.offset == 5 and image.topics["a"].partitions[0].partition_epoch == 4


def test_a_metadata_json_cluster_is_upgraded_into_the_log(tmp_path):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "cluster.json").write_text(json.dumps({"cluster_id": "c", "brokers": {"1": 9001}}))
    legacy = {
        "version": 7,
        "controller_epoch": 3,
        "topics": {
            "old": TopicImage(
                "old",
                "id-old",
                {"cleanup.policy": "compact"},
                {0: PartitionRegistration(0, [1], 1, 4, [1], 9)},
            ).to_json()
        },
        "broker_configs": {"<default>": {"log.retention.ms": "5000"}},
    }
    (state_dir / "metadata.json").write_text(json.dumps(legacy))
    state = ClusterState(tmp_path)
    state.initialize({1: 9001})
    assert not (state_dir / "metadata.json").exists()
    topic = state.topics()["old"]
    assert topic.configs == {"cleanup.policy": "compact"}
    assert (topic.partitions[0].leader_epoch, topic.partitions[0].partition_epoch) == (4, 9)
    assert state.dynamic_broker_configs(None) == {"log.retention.ms": "5000"}


def test_an_image_never_changes_and_a_delta_spans_the_catch_ups_since_the_last_take(state):
    epoch = state.claim_controller(1, lambda b: False)
    reader = ClusterState(state.cluster_dir)
    make_topic(state, epoch, "a")
    reader.take_metadata_delta()
    before = reader.metadata_image()
    state.alter_isr("a", 0, leader_epoch=0, partition_epoch=0, isr=[1])
    assert reader.metadata_image().topics["a"].partitions[0].isr == [1]  # a catch-up, no take
    make_topic(state, epoch, "b", partitions=1)
    with state.update_topic_configs() as topics:
        topics["a"] = replace(topics["a"], configs={"retention.ms": "2000"})
    after = reader.metadata_image()
    assert before.topics["a"].partitions[0].isr == [1, 2] and "b" not in before.topics
    assert before.topics["a"].configs == {"retention.ms": "1000"}
    assert after.topics["a"].partitions[1] is before.topics["a"].partitions[1]  # shared, unchanged
    delta = reader.take_metadata_delta()
    assert delta.partitions == {("a", 0), ("b", 0)} and delta.created_topics == {"b"}
    assert delta.topic_configs == {"a"} and not delta.full
    assert delta.image == before and delta.apply() == after
