"""A count off the wire never makes a broker allocate: the two frames a fuzzer found (a
55-byte CreatePartitions to 2,147,483,647 partitions, a 130-byte CreateTopics asking for
536,870,913) are answered with Kafka's errors at once, per topic, the broker's memory stays
flat and it answers the next request; CreatePartitions' assignment lists are checked as
Kafka checks them."""

from __future__ import annotations

import os
import struct
import time

import pytest
from kafka.protocol.api_key import ApiKey

from tests.cluster_harness import running_cluster, wait_until
from tests.raw_request import RawConnection, raw_request

pytestmark = pytest.mark.cluster

INVALID_PARTITIONS = 37
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42
INVALID_TOPIC = 17
OFFSET_METADATA_TOO_LARGE = 12
POLICY_VIOLATION = 44
# The answer a refusal must come within, and how far the broker's RSS may move meanwhile.
PROMPT_S = 0.1
FLAT_KB = 4 * 1024

# The first frame, byte for byte: CreatePartitions v1, client "kafka-python-3.0.12",
# topic "fz1" to 2**31-1 partitions, assignments null, validate_only true.
GROW_FZ1_TO_INT32_MAX = bytes.fromhex(
    "00000033" "0025" "0001" "00000007" "0013" "6b61666b612d707974686f6e2d332e302e3132"
    "00000001" "0003" "667a31" "7fffffff" "ffffffff" "50007500" "01"
)  # fmt: skip


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _creatable(name: str, partitions: int, configs: dict[str, str]) -> bytes:
    """One CreateTopics v4 topic: replication factor 1, no assignment."""
    entries = b"".join(_string(k) + _string(v) for k, v in configs.items())
    return _string(name) + struct.pack(">ihi", partitions, 1, 0) + struct.pack(">i", len(configs)) + entries


def _create_topics_v4(topics: list[bytes], validate_only: bool) -> bytes:
    payload = (
        struct.pack(">hhi", ApiKey.CreateTopics, 4, 7)
        + _string("kafka-python-3.0.12")
        + struct.pack(">i", len(topics))
        + b"".join(topics)
        + struct.pack(">i?", 30000, validate_only)
    )
    return struct.pack(">i", len(payload)) + payload


# The second frame: three topics, two with invalid names, one of 536,870,913 partitions.
THREE_TOPICS = _create_topics_v4(
    [
        _creatable("fz\0", 3, {}),
        _creatable("fz-del", 536_870_913, {}),
        _creatable("fz-cm\0", 65_537, {"cleanup.policy": "compact"}),
    ],
    validate_only=False,
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("counts"), 1) as cluster:
        with RawConnection(cluster.ports[1]) as conn:
            created = conn.request(
                ApiKey.CreateTopics,
                4,
                {
                    "topics": [{"name": "fz1", "num_partitions": 1, "replication_factor": 1}],
                    "timeout_ms": 10000,
                },
            )
        assert created.topics[0].error_code == 0
        yield cluster


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1])


def answered_promptly(cluster, frame: bytes):
    """Send ``frame`` raw; check it is answered within PROMPT_S without the broker's RSS
    moving and that the broker answers ApiVersions next. Returns the decoded answer."""
    pid = cluster.procs[1].pid
    with RawConnection(cluster.ports[1]) as conn:
        conn.request(ApiKey.ApiVersions, 0, {})  # a warm connection: time only the frame
        before = rss_kb(pid)
        started = time.monotonic()
        response = conn.request_bytes(frame)
        elapsed = time.monotonic() - started
        grown = rss_kb(pid) - before
        assert conn.request(ApiKey.ApiVersions, 0, {}).error_code == 0
    assert elapsed < PROMPT_S, f"answered after {elapsed * 1000:.0f} ms"
    assert grown < FLAT_KB, f"broker RSS grew by {grown} kB"
    return response


def test_the_55_byte_create_partitions_is_refused_naming_the_limit(cluster):
    assert len(GROW_FZ1_TO_INT32_MAX) == 55
    (result,) = answered_promptly(cluster, GROW_FZ1_TO_INT32_MAX).results
    assert (result.name, result.error_code) == ("fz1", POLICY_VIOLATION)
    assert "max.broker.partitions" in result.error_message and "10000" in result.error_message


def test_the_130_byte_create_topics_answers_each_topic_with_its_own_error(cluster):
    assert len(THREE_TOPICS) == 130
    results = {
        t.name: (t.error_code, t.error_message) for t in answered_promptly(cluster, THREE_TOPICS).topics
    }
    assert results["fz\0"][0] == results["fz-cm\0"][0] == INVALID_TOPIC
    assert results["fz-del"][0] == POLICY_VIOLATION and "max.broker.partitions" in results["fz-del"][1]


@pytest.mark.parametrize("validate_only", [True, False])
@pytest.mark.parametrize("partitions", [2**31 - 1, 536_870_913, 65_537])
def test_any_huge_partition_count_is_refused_at_once(cluster, partitions, validate_only):
    fits = f"fits-{partitions}-{validate_only}"
    frame = _create_topics_v4(
        [_creatable(fits, 2, {}), _creatable("huge", partitions, {}), _creatable("bad name", 2, {})],
        validate_only,
    )
    results = {t.name: t.error_code for t in answered_promptly(cluster, frame).topics}
    assert results == {fits: 0, "huge": POLICY_VIOLATION, "bad name": INVALID_TOPIC}


def create_partitions(cluster, topics: list[dict], validate_only: bool = False) -> dict[str, tuple]:
    with RawConnection(cluster.ports[1]) as conn:
        response = conn.request(
            ApiKey.CreatePartitions,
            1,
            {"topics": topics, "timeout_ms": 10000, "validate_only": validate_only},
        )
    return {r.name: (r.error_code, r.error_message) for r in response.results}


@pytest.mark.parametrize(
    "count, assignments, error",
    [
        (3, [[1]], INVALID_REPLICA_ASSIGNMENT),  # shorter than the new partitions
        (2, [[1], [1]], INVALID_REPLICA_ASSIGNMENT),  # longer
        (2**31 - 1, [[1]], INVALID_REPLICA_ASSIGNMENT),  # short, and a huge count
        (2, [[7]], INVALID_REPLICA_ASSIGNMENT),  # an unknown broker
        (2, [[1, 1]], INVALID_REPLICA_ASSIGNMENT),  # a broker twice
        (1, None, INVALID_PARTITIONS),  # not an increase
        (-(2**31), None, INVALID_PARTITIONS),
    ],
)
def test_create_partitions_checks_counts_and_assignments_as_kafka(cluster, count, assignments, error):
    topic = {
        "name": "fz1",
        "count": count,
        "assignments": None if assignments is None else [{"broker_ids": a} for a in assignments],
    }
    for validate_only in (True, False):
        assert create_partitions(cluster, [topic], validate_only)["fz1"][0] == error


def test_a_topic_named_twice_is_refused_once_and_left_alone(cluster):
    grow = {"name": "fz1", "count": 5, "assignments": None}
    assert create_partitions(cluster, [grow, grow]) == {"fz1": (INVALID_REQUEST, "Duplicate topic name.")}
    with RawConnection(cluster.ports[1]) as conn:
        metadata = conn.request(ApiKey.Metadata, 1, {"topics": [{"name": "fz1"}]})
    assert len(metadata.topics[0].partitions) == 1


COORDINATOR_NOT_READY = {14, 15, 16}  # loading, not available, not coordinator: retried


def commit_with_metadata(port: int, metadata: str) -> int:
    """One OffsetCommit of fz1-0 by a standalone consumer; its error code."""
    with RawConnection(port) as conn:
        response = conn.request(
            ApiKey.OffsetCommit,
            2,
            {
                "group_id": "fz-group",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "retention_time_ms": -1,
                "topics": [
                    {
                        "name": "fz1",
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 0, "committed_metadata": metadata}
                        ],
                    }
                ],
            },
        )
    return response.topics[0].partitions[0].error_code


@pytest.mark.parametrize(
    "length, error", [(4096, 0), (4097, OFFSET_METADATA_TOO_LARGE), (32767, OFFSET_METADATA_TOO_LARGE)]
)
def test_committed_metadata_is_bounded_by_offset_metadata_max_bytes(cluster, length, error):
    wait_until(
        lambda: (
            raw_request(
                cluster.ports[1], ApiKey.FindCoordinator, 1, {"key": "fz-group", "key_type": 0}
            ).error_code
            == 0
        ),
        15,
        "the group coordinator",
    )
    answered = wait_until(
        lambda: [
            code
            for code in [commit_with_metadata(cluster.ports[1], "m" * length)]
            if code not in COORDINATOR_NOT_READY
        ],
        15,
        "the group coordinator to answer",
    )
    assert answered == [error]


def test_a_backtracking_subscription_regex_does_not_hold_the_coordinator(cluster):
    """``(a+)+$`` against a long name of a's is exponential for a backtracking engine (Python's
    re: 4 s at 26 characters); Kafka matches with RE2J, in linear time."""
    long_name = "a" * 60 + "-"
    with RawConnection(cluster.ports[1]) as conn:
        created = conn.request(
            ApiKey.CreateTopics,
            4,
            {
                "topics": [{"name": long_name, "num_partitions": 1, "replication_factor": 1}],
                "timeout_ms": 10000,
            },
        )
        assert created.topics[0].error_code == 0
    heartbeat = {
        "group_id": "fz-regex",
        "member_id": "fz-regex-member-0000000000",
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_regex": "(a+)+$",
        "topic_partitions": [],
    }
    wait_until(
        lambda: (
            raw_request(
                cluster.ports[1], ApiKey.FindCoordinator, 1, {"key": "fz-regex", "key_type": 0}
            ).error_code
            == 0
        ),
        15,
        "the group coordinator",
    )
    pid = cluster.procs[1].pid
    started = cpu_s(pid)
    joined = wait_until(
        lambda: [
            r
            for r in [raw_request(cluster.ports[1], ApiKey.ConsumerGroupHeartbeat, 1, heartbeat)]
            if r.error_code not in COORDINATOR_NOT_READY
        ],
        15,
        "a heartbeat answer",
    )[0]
    assert joined.error_code == 0
    # the regex is resolved against the topics from the next heartbeat on
    again = raw_request(
        cluster.ports[1], ApiKey.ConsumerGroupHeartbeat, 1, {**heartbeat, "member_epoch": joined.member_epoch}
    )
    assert again.error_code == 0
    assert cpu_s(pid) - started < 1.0


def cpu_s(pid: int) -> float:
    """Processor time the process has used (user and system), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
