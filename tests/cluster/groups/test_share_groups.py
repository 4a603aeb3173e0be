"""Share groups (KIP-932) on real brokers with confluent-kafka ShareConsumers: several
consumers share one partition and every record is accepted once; RELEASE delivers a record
again with its delivery count raised, REJECT never again, nor a record released at the
delivery count limit; a read_committed group never gets records of aborted transactions;
what a consumer held when it closed, or when its process was SIGKILLed, comes back to
another once its lock expires; a SIGKILLed partition leader loses no acknowledgement (its
successor reads the persisted share-partition state); and on a secured cluster a member
needs READ on the group and DESCRIBE on its topics. Share session epochs are checked on the
wire, as Kafka checks them. The leader publishes each share partition's counts of records
acquired, released, rejected, accepted and returned by an expired lock, for `kctl watch`."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Consumer, KafkaError, KafkaException, ShareConsumer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)
from kafka.protocol.api_key import ApiKey

from brokerd.state import ClusterState
from tests.cluster_harness import LocalCluster, running_cluster, wait_until
from tests.kafka_helpers import (
    create_topic,
    partition_record,
    produce_sync,
    transactional_producer,
    watermarks,
)
from tests.raw_request import raw_request
from tests.security_harness import add_scram_user, sasl_settings, secure_cluster_dir

pytestmark = pytest.mark.cluster

LOCK_MS = 3000
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
COORDINATOR_NOT_READY = (14, 15, 16)  # loading, not available, not the coordinator yet
SHARE_CONFIGS = {
    "share.auto.offset.reset": "earliest",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.delivery.count.limit": "2",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("share"), 1, SHARE_CONFIGS) as c:
        yield c


def share_consumer(bootstrap: str, group: str, topic: str, explicit: bool = False, **conf) -> ShareConsumer:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit" if explicit else "implicit",
            **conf,
        }
    )
    consumer.subscribe([topic])
    return consumer


def poll_records(consumer: ShareConsumer, timeout: float = 1.0) -> list:
    """The records of one poll (an error fails the test)."""
    records = []
    for message in consumer.poll(timeout):
        assert message.error() is None, message.error()
        records.append(message)
    return records


def poll_until(consumer: ShareConsumer, enough, what: str, timeout: float = 60.0) -> list:
    """Poll until ``enough(records so far)``; every record polled is returned."""
    records: list = []
    deadline = time.monotonic() + timeout
    while not enough(records):
        assert time.monotonic() < deadline, (
            f"timed out waiting for {what}; got {[m.offset() for m in records]}"
        )
        records += poll_records(consumer)
    return records


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    """``count`` records, one batch each, so consumers can acquire them a few at a time."""
    reports = produce_sync(
        bootstrap, topic, [b"r%d" % i for i in range(start, start + count)], **{"batch.num.messages": 1}
    )
    assert all(error is None for error, _, _ in reports)


def test_two_consumers_share_a_partition_and_each_record_is_accepted_once(cluster: LocalCluster) -> None:
    create_topic(cluster, "shared", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "shared", 100)
    first = share_consumer(cluster.bootstrap, "g-shared", "shared", **{"max.poll.records": 5})
    second = share_consumer(cluster.bootstrap, "g-shared", "shared", **{"max.poll.records": 5})
    seen: dict[object, list] = {first: [], second: []}
    try:
        deadline = time.monotonic() + 60
        while sum(len(v) for v in seen.values()) < 100 or not all(seen.values()):
            assert time.monotonic() < deadline, {id(c): len(v) for c, v in seen.items()}
            for consumer in (first, second):
                seen[consumer] += poll_records(consumer, 0.5)
        described = raw_request(
            cluster.ports[1],
            ApiKey.ShareGroupDescribe,
            1,
            {"group_ids": ["g-shared"], "include_authorized_operations": False},
        )
        (group,) = described.groups
        assert (group.group_state, len(group.members)) == ("Stable", 2)
        # one partition, two members: the SimpleAssignor gives it to both
        assert all([tp.partitions for tp in m.assignment.topic_partitions] == [[0]] for m in group.members)
        # each assigned topic by id and by name, as Kafka describes it
        assert all(
            [tp.topic_name for tp in m.assignment.topic_partitions] == ["shared"] for m in group.members
        )
        listed = raw_request(
            cluster.ports[1], ApiKey.ListGroups, 5, {"states_filter": [], "types_filter": ["share"]}
        )
        assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [
            ("g-shared", "share", "Stable")
        ]
        (classic_view,) = raw_request(
            cluster.ports[1], ApiKey.DescribeGroups, 4, {"groups": ["g-shared"]}
        ).groups
        assert (classic_view.protocol_type, classic_view.group_state, len(classic_view.members)) == (
            "share",
            "Stable",
            2,
        )
        for consumer in (first, second):  # implicit mode: the last poll's records are accepted
            assert all(error is None for error in consumer.commit_sync(30).values())
    finally:
        first.close()
        second.close()
    offsets = [m.offset() for records in seen.values() for m in records]
    assert sorted(offsets) == list(range(100))  # each delivered once, to one of them
    assert all(m.delivery_count() == 1 for records in seen.values() for m in records)
    # everything was accepted: a newcomer to the group starts at the next record
    produce(cluster.bootstrap, "shared", 1, start=100)
    late = share_consumer(cluster.bootstrap, "g-shared", "shared")
    try:
        records = poll_until(late, bool, "the record after the accepted ones")
        late.commit_sync(30)
    finally:
        late.close()
    assert [m.offset() for m in records] == [100]
    # the group's start offset on the partition, as persisted: past every accepted record
    described = raw_request(
        cluster.ports[1],
        ApiKey.DescribeShareGroupOffsets,
        0,
        {"groups": [{"group_id": "g-shared", "topics": [{"topic_name": "shared", "partitions": [0]}]}]},
    )
    (group,) = described.groups
    assert [(p.partition_index, p.start_offset, p.error_code) for p in group.topics[0].partitions] == [
        (0, 101, 0)
    ]


def test_released_records_come_again_and_rejected_ones_never(cluster: LocalCluster) -> None:
    create_topic(cluster, "acks", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "acks", 3)
    consumer = share_consumer(cluster.bootstrap, "g-acks", "acks", explicit=True)
    try:
        records = poll_until(consumer, lambda r: len(r) >= 3, "three records")
        assert [(m.offset(), m.delivery_count()) for m in records] == [(0, 1), (1, 1), (2, 1)]
        consumer.acknowledge(records[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(records[1], AcknowledgeType.REJECT)
        consumer.acknowledge(records[2], AcknowledgeType.ACCEPT)
        results = consumer.commit_sync(30)
        assert all(error is None for error in results.values()), results
        again = poll_until(consumer, bool, "the released record")
        assert [(m.offset(), m.delivery_count(), m.value()) for m in again] == [(0, 2, b"r0")]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync(30)
        produce(cluster.bootstrap, "acks", 1, start=3)
        after = poll_until(consumer, bool, "the next record")
        assert [m.offset() for m in after] == [3]  # the rejected record 1 never again
        consumer.acknowledge(after[0], AcknowledgeType.ACCEPT)
    finally:
        consumer.close()


def test_a_record_released_at_the_delivery_count_limit_is_archived(cluster: LocalCluster) -> None:
    create_topic(cluster, "poison", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "poison", 1)
    consumer = share_consumer(cluster.bootstrap, "g-poison", "poison", explicit=True)
    try:
        for delivery in (1, 2):  # group.share.delivery.count.limit is 2 here
            (record,) = poll_until(consumer, bool, f"delivery {delivery}")
            assert (record.offset(), record.delivery_count()) == (0, delivery)
            consumer.acknowledge(record, AcknowledgeType.RELEASE)
            assert all(error is None for error in consumer.commit_sync(30).values())
        produce(cluster.bootstrap, "poison", 1, start=1)
        after = poll_until(consumer, bool, "the next record")
        assert [m.offset() for m in after] == [1]  # record 0 was archived, not delivered a third time
        consumer.acknowledge(after[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync(30)
    finally:
        consumer.close()


def published_share_status(cluster: LocalCluster, group: str, topic: str) -> dict | None:
    """The status of the group's share partition 0 of ``topic`` as its leader last published
    it in the state directory (what `kctl watch` reads)."""
    for entries in cluster.state.share_status().values():
        for entry in entries:
            if (entry["group"], entry["topic"], entry["partition"]) == (group, topic, 0):
                return entry
    return None


def test_the_leader_publishes_deliveries_releases_rejections_and_lock_expiries(cluster: LocalCluster) -> None:
    create_topic(cluster, "counted", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "counted", 3)
    consumer = share_consumer(cluster.bootstrap, "g-counted", "counted", explicit=True)
    try:
        records = poll_until(consumer, lambda r: len(r) >= 3, "three records")
        consumer.acknowledge(records[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(records[1], AcknowledgeType.REJECT)
        consumer.acknowledge(records[2], AcknowledgeType.ACCEPT)
        assert all(error is None for error in consumer.commit_sync(30).values())
        again = poll_until(consumer, bool, "the released record")
        assert [(m.offset(), m.delivery_count()) for m in again] == [(0, 2)]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        assert all(error is None for error in consumer.commit_sync(30).values())
    finally:
        consumer.close()
    # a member that dies holding a record: its acquisition lock expires on the leader's timer
    produce(cluster.bootstrap, "counted", 1, start=3)
    holder = start_holder(cluster.bootstrap, "g-counted", "counted", 1)
    holder.kill()
    holder.wait(10)

    def expired() -> dict | None:
        status = published_share_status(cluster, "g-counted", "counted")
        return status if status is not None and status["lock_expired"] >= 1 else None

    status = wait_until(expired, 30, "the leader to publish the expired acquisition lock")
    counts = {k: v for k, v in status.items() if k not in ("group", "topic", "partition", "leader_epoch")}
    assert counts == {
        "delivered": 5,  # records 0-2, record 0 again, record 3
        "redelivered": 1,
        "redelivered_at": {"2": 1},
        "released": 1,
        "rejected": 1,
        "archived": 0,
        "lock_expired": 1,
        "accepted": 2,
        "acquired": 0,
        "available": 1,  # record 3, back after its lock expired
        "max_delivery_count": 1,
        "start_offset": 3,
        "end_offset": 4,
    }


def test_a_read_committed_share_group_never_gets_aborted_records(cluster: LocalCluster) -> None:
    create_topic(cluster, "txns", 1, 1, wait_for_leaders=True)
    producer = transactional_producer(cluster.bootstrap, "share-txn")
    producer.begin_transaction()
    producer.produce("txns", b"committed-1")
    producer.produce("txns", b"committed-2")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce("txns", b"aborted")
    producer.flush(30)  # written, then aborted
    producer.abort_transaction(30)
    produce_sync(cluster.bootstrap, "txns", [b"plain"])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    setting = ConfigEntry(
        "share.isolation.level", "read_committed", incremental_operation=AlterConfigOpType.SET
    )
    for future in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.GROUP, "g-rc", incremental_configs=[setting])]
    ).values():
        future.result(10)

    def values(group: str) -> list[bytes]:
        consumer = share_consumer(cluster.bootstrap, group, "txns")
        try:
            records = poll_until(consumer, lambda r: any(m.value() == b"plain" for m in r), "the last record")
            consumer.commit_sync(30)
        finally:
            consumer.close()
        return [m.value() for m in records]

    assert values("g-rc") == [b"committed-1", b"committed-2", b"plain"]
    assert values("g-ru") == [b"committed-1", b"committed-2", b"aborted", b"plain"]  # read_uncommitted
    # the aborted record and both markers were acknowledged as gaps: nothing is left in flight
    end = watermarks(cluster.bootstrap, "txns")[1]
    described = raw_request(
        cluster.ports[1],
        ApiKey.DescribeShareGroupOffsets,
        0,
        {"groups": [{"group_id": "g-rc", "topics": [{"topic_name": "txns", "partitions": [0]}]}]},
    )
    assert described.groups[0].topics[0].partitions[0].start_offset == end


def test_an_empty_share_group_is_reset_and_its_offsets_deleted(cluster: LocalCluster) -> None:
    create_topic(cluster, "reset", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "reset", 10)
    port = cluster.ports[1]

    def read(expected: int) -> list[int]:
        consumer = share_consumer(cluster.bootstrap, "g-reset", "reset")
        try:
            records = poll_until(consumer, lambda r: len(r) >= expected, f"{expected} records")
            consumer.commit_sync(30)
        finally:
            consumer.close()
        return [m.offset() for m in records]

    def start_offset() -> int:
        body = {"groups": [{"group_id": "g-reset", "topics": [{"topic_name": "reset", "partitions": [0]}]}]}
        return (
            raw_request(port, ApiKey.DescribeShareGroupOffsets, 0, body)
            .groups[0]
            .topics[0]
            .partitions[0]
            .start_offset
        )

    assert read(10) == list(range(10))
    assert start_offset() == 10
    alter = {
        "group_id": "g-reset",
        "topics": [{"topic_name": "reset", "partitions": [{"partition_index": 0, "start_offset": 6}]}],
    }
    altered = raw_request(port, ApiKey.AlterShareGroupOffsets, 0, alter)
    assert (altered.error_code, altered.responses[0].partitions[0].error_code) == (0, 0)
    assert start_offset() == 6
    assert read(4) == [6, 7, 8, 9]  # from the new start offset, delivered afresh
    deleted = raw_request(
        port, ApiKey.DeleteShareGroupOffsets, 0, {"group_id": "g-reset", "topics": [{"topic_name": "reset"}]}
    )
    assert (deleted.error_code, deleted.responses[0].error_code) == (0, 0)
    assert read(10) == list(range(10))  # share.auto.offset.reset (earliest here) decides again
    # a group with members is refused
    member = share_consumer(cluster.bootstrap, "g-reset", "reset")
    try:
        poll_records(member)
        wait_until(
            lambda: raw_request(port, ApiKey.AlterShareGroupOffsets, 0, alter).error_code == NON_EMPTY_GROUP,
            30,
            "NON_EMPTY_GROUP while a member is in the group",
        )
    finally:
        member.close()


def test_all_offsets_of_a_share_group_without_members_are_those_it_read(cluster: LocalCluster) -> None:
    create_topic(cluster, "all-read", 2, 1, wait_for_leaders=True)
    create_topic(cluster, "all-unread", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "all-read", 6)
    consumer = share_consumer(cluster.bootstrap, "g-all", "all-read")
    try:
        poll_until(consumer, lambda r: len(r) >= 6, "six records")
        consumer.commit_sync(30)
    finally:
        consumer.close()
    ends = {p: watermarks(cluster.bootstrap, "all-read", p)[1] for p in (0, 1)}
    # no topics named: every partition the group has share state for, though none subscribes
    described = raw_request(
        cluster.ports[1],
        ApiKey.DescribeShareGroupOffsets,
        0,
        {"groups": [{"group_id": "g-all", "topics": None}]},
    )
    (group,) = described.groups
    assert group.error_code == 0
    assert [
        (t.topic_name, [(p.partition_index, p.start_offset, p.error_code) for p in t.partitions])
        for t in group.topics
    ] == [("all-read", [(0, ends[0], 0), (1, ends[1], 0)])]
    # a group that read nothing has nothing to describe
    (nothing,) = raw_request(
        cluster.ports[1],
        ApiKey.DescribeShareGroupOffsets,
        0,
        {"groups": [{"group_id": "g-none", "topics": None}]},
    ).groups
    assert (nothing.error_code, list(nothing.topics)) == (0, [])


def test_a_consumer_group_id_is_not_taken_by_a_share_group(cluster: LocalCluster) -> None:
    create_topic(cluster, "taken", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "taken", 1)
    classic = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "g-taken", "auto.offset.reset": "earliest"}
    )
    try:
        classic.subscribe(["taken"])
        deadline = time.monotonic() + 30
        while classic.poll(0.5) is None:
            assert time.monotonic() < deadline, "the consumer group got no record"
        body = {
            "group_id": "g-taken",
            "member_id": "share-member",
            "member_epoch": 0,
            "rack_id": None,
            "subscribed_topic_names": ["taken"],
        }
        answer = raw_request(cluster.ports[1], ApiKey.ShareGroupHeartbeat, 1, body)
        assert (answer.error_code, answer.error_message) == (
            GROUP_ID_NOT_FOUND,
            "Group g-taken is not a share group.",
        )
    finally:
        classic.close()


def test_share_session_epochs_are_checked(cluster: LocalCluster) -> None:
    port = cluster.ports[1]

    def share_fetch(epoch: int):
        body = {
            "group_id": "g-raw",
            "member_id": "raw-member",
            "share_session_epoch": epoch,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 10,
            "batch_size": 10,
            "topics": [],
            "forgotten_topics_data": [],
        }
        return raw_request(port, ApiKey.ShareFetch, 1, body).error_code

    def share_acknowledge(epoch: int):
        body = {"group_id": "g-raw", "member_id": "raw-member", "share_session_epoch": epoch, "topics": []}
        return raw_request(port, ApiKey.ShareAcknowledge, 1, body).error_code

    assert share_fetch(3) == SHARE_SESSION_NOT_FOUND
    assert share_acknowledge(0) == INVALID_SHARE_SESSION_EPOCH  # only a fetch opens a session
    assert share_fetch(0) == 0
    assert share_fetch(1) == 0
    assert share_fetch(1) == INVALID_SHARE_SESSION_EPOCH  # the next one is 2
    assert share_acknowledge(2) == 0
    assert share_fetch(-1) == 0  # closes it
    assert share_fetch(3) == SHARE_SESSION_NOT_FOUND


def test_acknowledgements_after_the_member_left_the_group_are_kept(cluster: LocalCluster) -> None:
    # a closing consumer's last ShareAcknowledge may reach a partition leader after its leave
    # reached the coordinator (here the same broker): its share session and records stay
    # until that acknowledgement closes the session
    create_topic(cluster, "left", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "left", 5)
    port = cluster.ports[1]
    member = str(uuid.uuid4())

    def heartbeat(epoch: int):
        body = {
            "group_id": "g-left",
            "member_id": member,
            "member_epoch": epoch,
            "rack_id": None,
            "subscribed_topic_names": ["left"] if epoch == 0 else None,
        }
        return raw_request(port, ApiKey.ShareGroupHeartbeat, 1, body)

    member_epoch, assignment = 0, None

    def assigned():
        nonlocal member_epoch, assignment
        response = heartbeat(member_epoch)
        if response.error_code in COORDINATOR_NOT_READY:  # as a client, ask where it is first
            raw_request(port, ApiKey.FindCoordinator, 1, {"key": "g-left", "key_type": 0})
            return False
        assert response.error_code == 0, response
        member_epoch = response.member_epoch
        assignment = response.assignment or assignment
        return assignment is not None and assignment.topic_partitions

    wait_until(assigned, 30, "an assignment")
    (topic_id,) = [tp.topic_id for tp in assignment.topic_partitions]
    epoch = 0
    acquired: list = []

    def share_fetch() -> bool:
        nonlocal epoch
        body = {
            "group_id": "g-left",
            "member_id": member,
            "share_session_epoch": epoch,
            "max_wait_ms": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 10,
            "batch_size": 10,
            "topics": [
                {"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}
            ],
            "forgotten_topics_data": [],
        }
        response = raw_request(port, ApiKey.ShareFetch, 1, body)
        assert response.error_code == 0, response
        epoch += 1
        for topic in response.responses:
            for p in topic.partitions:
                acquired.extend(range(r.first_offset, r.last_offset + 1) for r in p.acquired_records)
        return sum(len(r) for r in acquired) >= 5

    wait_until(share_fetch, 30, "five records acquired")
    assert sorted(o for r in acquired for o in r) == list(range(5))
    left = heartbeat(-1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    acknowledged = raw_request(
        port,
        ApiKey.ShareAcknowledge,
        1,
        {
            "group_id": "g-left",
            "member_id": member,
            "share_session_epoch": -1,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "acknowledgement_batches": [
                                {"first_offset": 0, "last_offset": 4, "acknowledge_types": [1]}
                            ],
                        }
                    ],
                }
            ],
        },
    )
    assert acknowledged.error_code == 0, acknowledged
    assert [(p.partition_index, p.error_code) for t in acknowledged.responses for p in t.partitions] == [
        (0, 0)
    ]
    (group,) = raw_request(
        port,
        ApiKey.DescribeShareGroupOffsets,
        0,
        {"groups": [{"group_id": "g-left", "topics": [{"topic_name": "left", "partitions": [0]}]}]},
    ).groups
    assert group.topics[0].partitions[0].start_offset == 5  # every record accepted


def test_a_share_consumer_with_fetch_max_bytes_zero_gets_no_records(cluster: LocalCluster) -> None:
    create_topic(cluster, "no-bytes", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "no-bytes", 10)
    consumer = share_consumer(cluster.bootstrap, "g-no-bytes", "no-bytes", **{"fetch.max.bytes": 0})
    try:
        # as in Kafka, a ShareFetch with MaxBytes 0 acquires nothing
        received = [m for _ in range(5) for m in poll_records(consumer, 1.0)]
    finally:
        consumer.close()
    assert received == []
    # the records are still there for a consumer that asks for bytes
    other = share_consumer(cluster.bootstrap, "g-no-bytes", "no-bytes")
    try:
        records = poll_until(other, lambda r: len(r) >= 10, "the ten records")
        other.commit_sync(30)
    finally:
        other.close()
    assert [(m.offset(), m.delivery_count()) for m in records] == [(i, 1) for i in range(10)]


def test_what_a_closed_consumer_held_goes_to_another(cluster: LocalCluster) -> None:
    create_topic(cluster, "closed", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "closed", 5)
    holder = share_consumer(cluster.bootstrap, "g-closed", "closed", explicit=True)
    try:
        held = poll_until(holder, lambda r: len(r) >= 5, "five records")
    finally:
        holder.close()  # nothing acknowledged: its share session ends, the records are released
    assert [m.delivery_count() for m in held] == [1] * 5
    other = share_consumer(cluster.bootstrap, "g-closed", "closed")
    try:
        records = poll_until(other, lambda r: len(r) >= 5, "the released records")
        other.commit_sync(30)
    finally:
        other.close()
    assert [(m.offset(), m.delivery_count()) for m in records] == [(i, 2) for i in range(5)]
    # both left the group as they closed
    described = raw_request(
        cluster.ports[1],
        ApiKey.ShareGroupDescribe,
        1,
        {"group_ids": ["g-closed"], "include_authorized_operations": False},
    )
    (group,) = described.groups
    assert (group.error_code, group.group_state, list(group.members)) == (0, "Empty", [])


HOLDER = """
import sys
import time
from confluent_kafka import ShareConsumer
consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                          "share.acknowledgement.mode": "explicit"})
consumer.subscribe([sys.argv[3]])
held, deadline = 0, time.monotonic() + 60
while held < int(sys.argv[4]) and time.monotonic() < deadline:
    held += sum(1 for m in consumer.poll(1.0) if m.error() is None)
print("held", held, flush=True)
sys.stdin.read()  # holds its records, unacknowledged, until it is killed
"""


def start_holder(bootstrap: str, group: str, topic: str, count: int) -> subprocess.Popen:
    """A share consumer in a process of its own, once it holds ``count`` records (acquired,
    never acknowledged): kill it to leave them to their acquisition locks."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, bootstrap, group, topic, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert holder.stdout is not None
    if holder.stdout.readline().split() != ["held", str(count)]:
        holder.kill()
        raise AssertionError(f"the holder did not get {count} records of {topic}")
    return holder


def test_what_a_killed_consumer_held_comes_back_when_its_lock_expires(cluster: LocalCluster) -> None:
    create_topic(cluster, "killed", 1, 1, wait_for_leaders=True)
    produce(cluster.bootstrap, "killed", 4)
    started_at = time.monotonic()  # the holder acquires its records after this
    holder = start_holder(cluster.bootstrap, "g-killed", "killed", 4)
    holder.kill()
    holder.wait(10)
    other = share_consumer(cluster.bootstrap, "g-killed", "killed")
    try:
        records = poll_until(other, lambda r: len(r) >= 4, "the killed consumer's records")
        returned_after = time.monotonic() - started_at
        other.commit_sync(30)
    finally:
        other.close()
    assert [(m.offset(), m.delivery_count()) for m in records] == [(i, 2) for i in range(4)]
    assert returned_after >= LOCK_MS / 1000  # not before their lock ran out


def test_a_killed_leader_loses_no_acknowledgement(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "failover", 3, SHARE_CONFIGS) as cluster:
        create_topic(cluster, "orders", 1, 3, {"min.insync.replicas": "2"}, wait_for_leaders=True)
        produce(cluster.bootstrap, "orders", 40)
        accepted: list[int] = []
        consumer = share_consumer(
            cluster.bootstrap, "g-failover", "orders", explicit=True, **{"max.poll.records": 5}
        )
        try:
            while len(accepted) < 20:
                records = poll_until(consumer, bool, "records before the failover")
                for m in records:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                results = consumer.commit_sync(30)
                assert all(error is None for error in results.values()), results
                accepted += [m.offset() for m in records]
            # acquired when the leader dies, their acknowledgement not sent yet
            pending = [m.offset() for m in poll_until(consumer, bool, "records held through the failover")]
            for offset in pending:
                consumer.acknowledge_offset("orders", 0, offset, AcknowledgeType.ACCEPT)
            old_leader = partition_record(cluster, "orders").leader
            cluster.kill(old_leader)
            wait_until(
                lambda: partition_record(cluster, "orders").leader not in (-1, old_leader), 30, "a new leader"
            )
            deadline = time.monotonic() + 120
            while len(accepted) < 40:
                assert time.monotonic() < deadline, sorted(accepted)
                results = consumer.commit_sync(30)
                # an acknowledgement no leader confirmed does not count: those records come again
                if pending and results and all(error is None for error in results.values()):
                    accepted += pending
                records = poll_records(consumer)
                for m in records:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                pending = [m.offset() for m in records]
        finally:
            consumer.close()
        assert sorted(accepted) == list(range(40))  # nothing accepted twice, nothing lost


def test_share_consumers_need_read_on_the_group_and_describe_on_the_topics(tmp_path: Path) -> None:
    directory = tmp_path / "secured"
    admin_password, overrides = secure_cluster_dir(directory)
    state = ClusterState(directory)
    for user in ("reader", "no-group", "no-topic"):
        add_scram_user(state, user, f"{user}-secret")
    with running_cluster(directory, 1, {**overrides, **SHARE_CONFIGS}, "SASL_PLAINTEXT") as cluster:
        admin_conf = {"bootstrap.servers": cluster.bootstrap, **sasl_settings("admin", admin_password)}
        admin = AdminClient(admin_conf)
        create_topic(admin, "guarded", 1, 1)
        produce_sync(cluster.bootstrap, "guarded", [b"secret"], **sasl_settings("admin", admin_password))

        def acl(user: str, operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
            return AclBinding(
                resource_type,
                name,
                ResourcePatternType.LITERAL,
                f"User:{user}",
                "*",
                operation,
                AclPermissionType.ALLOW,
            )

        bindings = [
            acl("reader", AclOperation.READ, ResourceType.GROUP, "g-guarded"),
            acl("reader", AclOperation.READ, ResourceType.TOPIC, "guarded"),
            # DESCRIBE finds the coordinator; joining needs READ
            acl("no-group", AclOperation.DESCRIBE, ResourceType.GROUP, "g-guarded"),
            acl("no-group", AclOperation.READ, ResourceType.TOPIC, "guarded"),
            acl("no-topic", AclOperation.READ, ResourceType.GROUP, "g-guarded"),
        ]
        for future in admin.create_acls(bindings).values():
            future.result(10)

        def first_error(user: str) -> int:
            consumer = share_consumer(
                cluster.bootstrap,
                "g-guarded",
                "guarded",
                **sasl_settings(user, f"{user}-secret"),
                log_level=0,
            )
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    try:
                        for message in consumer.poll(1.0):
                            if message.error() is not None:
                                return message.error().code()
                    except KafkaException as exc:
                        return exc.args[0].code()
                raise AssertionError(f"{user} was not refused")
            finally:
                consumer.close()

        assert first_error("no-group") == KafkaError.GROUP_AUTHORIZATION_FAILED
        assert first_error("no-topic") == KafkaError.TOPIC_AUTHORIZATION_FAILED
        reader = share_consumer(
            cluster.bootstrap, "g-guarded", "guarded", **sasl_settings("reader", "reader-secret")
        )
        try:
            records = poll_until(reader, bool, "the reader's record")
            reader.commit_sync(30)
        finally:
            reader.close()
        assert [m.value() for m in records] == [b"secret"]


def test_each_record_of_a_topic_led_by_several_brokers_is_delivered_once(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "spread", 3, SHARE_CONFIGS) as cluster:
        create_topic(cluster, "spread", 3, 2, wait_for_leaders=True)
        for partition in range(3):
            produce_sync(
                cluster.bootstrap, "spread", [b"p%d-%d" % (partition, i) for i in range(10)], partition
            )
        first = share_consumer(cluster.bootstrap, "g-spread", "spread")
        second = share_consumer(cluster.bootstrap, "g-spread", "spread")
        seen: dict[object, list] = {first: [], second: []}
        try:
            deadline = time.monotonic() + 60
            while sum(len(v) for v in seen.values()) < 30:
                assert time.monotonic() < deadline, {id(c): len(v) for c, v in seen.items()}
                for consumer in (first, second):
                    seen[consumer] += poll_records(consumer, 0.5)
            for consumer in (first, second):
                assert all(error is None for error in consumer.commit_sync(30).values())
        finally:
            first.close()
            second.close()
        delivered = sorted((m.partition(), m.offset()) for records in seen.values() for m in records)
        assert delivered == [(p, o) for p in range(3) for o in range(10)]  # each once
