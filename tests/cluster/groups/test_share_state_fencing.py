"""A real broker, leader of the __share_group_state partitions, refuses a share-partition
snapshot older than the newest one of its share partition before it reaches the log: the
write a leader still holding the state it loaded before an admin reset would make is
answered FENCED_STATE_EPOCH, and the compacted topic never holds it (compaction keeps the
latest offset of each key, so it would otherwise win over the reset)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.errors import FencedStateEpochError
from kafka.protocol.api_key import ApiKey

from brokerd.coordinator.records import build_batch, partition_for
from brokerd.share.share_state import SHARE_STATE_TOPIC, ShareKey, ShareState
from tests.cluster.groups.test_share_groups import poll_until, share_consumer
from tests.cluster_harness import running_cluster
from tests.kafka_helpers import consume_all, create_topic, produce_sync
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster

GROUP, TOPIC = "g-fenced", "fenced"
NUM_STATE_PARTITIONS = 4


def accept_all(bootstrap: str, count: int) -> None:
    """A share consumer reads and accepts ``count`` records, then leaves the group."""
    consumer = share_consumer(bootstrap, GROUP, TOPIC)
    try:
        poll_until(consumer, lambda r: len(r) >= count, f"{count} records")
        consumer.commit_sync(30)
    finally:
        consumer.close()


def produce_snapshot(port: int, partition: int, key: ShareKey, state: ShareState) -> int:
    """Append one snapshot as the persister does (Produce, acks=all); the answer's error code."""
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 10_000,
        "topic_data": [
            {
                "name": SHARE_STATE_TOPIC,
                "partition_data": [
                    {"index": partition, "records": build_batch([(key.encode(), state.encode())])}
                ],
            }
        ],
    }
    return raw_request(port, ApiKey.Produce, 8, body).responses[0].partition_responses[0].error_code


def logged_snapshots(bootstrap: str, key: ShareKey) -> list[ShareState]:
    """Every snapshot of ``key`` in __share_group_state, in log order."""
    found = consume_all(bootstrap, SHARE_STATE_TOPIC, NUM_STATE_PARTITIONS, 0)
    return [ShareState.decode(value) for _, _, raw_key, value in found if raw_key == key.encode()]


def test_a_snapshot_from_before_an_admin_reset_is_refused_before_the_log(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path,
        1,
        {
            "share.auto.offset.reset": "earliest",
            "share.coordinator.state.topic.num.partitions": str(NUM_STATE_PARTITIONS),
        },
    ) as cluster:
        port = cluster.ports[1]
        create_topic(cluster, TOPIC, 1, 1, wait_for_leaders=True)
        assert all(e is None for e, _, _ in produce_sync(cluster.bootstrap, TOPIC, [b"r"] * 10))
        accept_all(cluster.bootstrap, 10)
        alter = {
            "group_id": GROUP,
            "topics": [{"topic_name": TOPIC, "partitions": [{"partition_index": 0, "start_offset": 6}]}],
        }
        altered = raw_request(port, ApiKey.AlterShareGroupOffsets, 0, alter)
        assert (altered.error_code, altered.responses[0].partitions[0].error_code) == (0, 0)

        topics = cluster.state.topics()
        key = ShareKey(GROUP, topics[TOPIC].topic_id, 0)
        partition = partition_for(key.hash_key, NUM_STATE_PARTITIONS)
        before = logged_snapshots(cluster.bootstrap, key)
        reset = before[-1]
        assert (reset.start_offset, reset.state_epoch) == (6, 1)

        # the leader's late write of the state it loaded before the reset (SPSO 10)
        stale = ShareState(10, reset.leader_epoch, (), reset.state_epoch - 1)
        assert produce_snapshot(port, partition, key, stale) == FencedStateEpochError.errno
        assert logged_snapshots(cluster.bootstrap, key) == before
