"""A restarted leader's high watermark, on real brokers: it starts from the one it checkpointed,
never lies below the log start, and while it is behind the leader's own epoch ListOffsets latest
answers OFFSET_NOT_AVAILABLE (clients retry it) instead of an offset the partition already
served beyond.

The followers are paused (SIGSTOP) before the leader is SIGKILLed and started again, so no
fetch can tell the new leader its high watermark; a long session and lag time keep them live
and in the ISR meanwhile."""

from __future__ import annotations

import signal

import pytest
from confluent_kafka import KafkaError
from kafka.protocol.api_key import ApiKey

from tests.cluster_harness import wait_until
from tests.kafka_helpers import (
    RawClient,
    create_topic,
    delete_records,
    partition_record,
    produce_sync,
    watermarks,
)
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster

LATEST, EARLIEST = -1, -2
PAUSED_FOLLOWERS_STAY_IN_SYNC = {"broker.session.timeout.ms": "30000", "replica.lag.time.max.ms": "30000"}


def list_offset(port: int, topic: str, timestamp: int) -> tuple[int, int]:
    """(error code, offset) of one ListOffsets v4 answered by the broker at ``port``."""
    response = raw_request(
        port,
        ApiKey.ListOffsets,
        4,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}
                    ],
                }
            ],
        },
    )
    answer = response.topics[0].partitions[0]
    return answer.error_code, answer.offset


def restart_leader_with_followers_paused(cluster, topic: str) -> tuple[int, list[int]]:
    leader = partition_record(cluster, topic).leader
    followers = [b for b in cluster.ports if b != leader]
    for follower in followers:
        cluster.signal(follower, signal.SIGSTOP)
    cluster.kill(leader)
    cluster.start(leader)
    assert partition_record(cluster, topic).leader == leader
    return leader, followers


def test_a_restarted_leader_answers_with_its_checkpointed_high_watermark(cluster_factory):
    three = cluster_factory(
        3, {**PAUSED_FOLLOWERS_STAY_IN_SYNC, "replica.high.watermark.checkpoint.interval.ms": "100"}
    )
    create_topic(three, "checkpointed", 1, 3, wait_for_leaders=True)
    assert all(
        err is None
        for err, _, _ in produce_sync(
            three.bootstrap, "checkpointed", [b"r%d" % i for i in range(300)], acks="all"
        )
    )
    leader = partition_record(three, "checkpointed").leader
    checkpoint = three.state.broker_dir(leader) / "data" / "replication-offset-checkpoint"
    wait_until(
        lambda: checkpoint.exists() and "checkpointed 0 300" in checkpoint.read_text(),
        10,
        "the leader to checkpoint its high watermark",
    )

    leader, _ = restart_leader_with_followers_paused(three, "checkpointed")
    assert list_offset(three.ports[leader], "checkpointed", LATEST) == (0, 300)


def test_a_leader_behind_its_epoch_answers_offset_not_available_until_followers_fetch(cluster_factory):
    three = cluster_factory(
        3, {**PAUSED_FOLLOWERS_STAY_IN_SYNC, "replica.high.watermark.checkpoint.interval.ms": "3600000"}
    )
    create_topic(three, "uncheckpointed", 1, 3, {"segment.bytes": "4096"}, wait_for_leaders=True)
    assert all(
        err is None
        for err, _, _ in produce_sync(
            three.bootstrap, "uncheckpointed", [b"r%d" % i for i in range(300)], acks="all"
        )
    )
    assert delete_records(three.bootstrap, "uncheckpointed", 150).low_watermark == 150

    leader, followers = restart_leader_with_followers_paused(three, "uncheckpointed")
    port = three.ports[leader]
    assert list_offset(port, "uncheckpointed", EARLIEST) == (0, 150)
    assert list_offset(port, "uncheckpointed", LATEST)[0] == KafkaError.OFFSET_NOT_AVAILABLE
    raw = RawClient(port)
    try:
        _, fetched = raw.fetch_partitions({0: 150}, 1 << 20, 1 << 20, topic="uncheckpointed")
    finally:
        raw.close()
    assert fetched[0].high_watermark == 150  # never below the log start, though not yet known

    for follower in followers:
        three.signal(follower, signal.SIGCONT)
    wait_until(
        lambda: list_offset(port, "uncheckpointed", LATEST) == (0, 300),
        10,
        "the followers' fetches to move the high watermark",
    )
    assert watermarks(three.bootstrap, "uncheckpointed") == (150, 300)
