"""Scaling a topic with real admin clients: CreatePartitions, CreateTopics with a replica
assignment, and preferred leader election (ElectLeaders), on 3 real brokers."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.cluster_harness import running_cluster, wait_until

pytestmark = pytest.mark.cluster

try:
    from confluent_kafka import ElectionType
except ImportError:  # older confluent-kafka keeps it in the admin module
    from confluent_kafka.admin import ElectionType

INVALID_PARTITIONS = 37
INVALID_REPLICA_ASSIGNMENT = 39
ELECTION_NOT_NEEDED = 84


def _error_code(future) -> int:
    with pytest.raises(KafkaException) as raised:
        future.result(10)
    return raised.value.args[0].code()


def _partitions(admin: AdminClient, topic: str) -> dict:
    return admin.list_topics(topic, timeout=10).topics[topic].partitions


@pytest.fixture(scope="module")
def three_brokers(tmp_path_factory):
    with running_cluster(
        tmp_path_factory.mktemp("admin"), 3, {"auto.leader.rebalance.enable": "false"}
    ) as cluster:
        yield cluster


def test_a_topic_grows_and_new_partitions_take_records(three_brokers):
    admin = AdminClient({"bootstrap.servers": three_brokers.bootstrap})
    admin.create_topics([NewTopic("grows", 2, 2)])["grows"].result(10)
    admin.create_partitions([NewPartitions("grows", 5)])["grows"].result(10)
    parts = wait_until(
        lambda: len(_partitions(admin, "grows")) == 5 and _partitions(admin, "grows"),
        10,
        "five partitions in metadata",
    )
    assert all(len(p.replicas) == 2 for p in parts.values())
    assert len({p.leader for p in parts.values()}) == 3  # new leaders spread over the brokers
    producer = Producer({"bootstrap.servers": three_brokers.bootstrap, "acks": "all"})
    for p in range(5):
        producer.produce("grows", b"to-%d" % p, partition=p)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": three_brokers.bootstrap, "group.id": "g", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("grows", p, 0) for p in range(5)])
    got = set()
    wait_until(
        lambda: (
            got.update(m.value() for m in consumer.consume(10, 0.2) if m.error() is None) or len(got) == 5
        ),
        15,
        "every record",
    )
    consumer.close()
    assert got == {b"to-%d" % p for p in range(5)}


def test_partition_counts_only_grow_and_assignments_are_checked(three_brokers):
    admin = AdminClient({"bootstrap.servers": three_brokers.bootstrap})
    admin.create_topics([NewTopic("fixed", 3, 1)])["fixed"].result(10)
    assert _error_code(admin.create_partitions([NewPartitions("fixed", 2)])["fixed"]) == INVALID_PARTITIONS
    assert _error_code(admin.create_partitions([NewPartitions("fixed", 3)])["fixed"]) == INVALID_PARTITIONS
    assert (
        _error_code(admin.create_partitions([NewPartitions("fixed", 4, replica_assignment=[[9]])])["fixed"])
        == INVALID_REPLICA_ASSIGNMENT
    )
    admin.create_partitions([NewPartitions("fixed", 4, replica_assignment=[[3]])])["fixed"].result(10)
    part = wait_until(lambda: _partitions(admin, "fixed").get(3), 10, "partition 3")
    assert list(part.replicas) == [3]


def test_create_topic_with_a_replica_assignment(three_brokers):
    admin = AdminClient({"bootstrap.servers": three_brokers.bootstrap})
    admin.create_topics([NewTopic("placed", 2, replica_assignment=[[3, 1], [2, 3]])])["placed"].result(10)
    parts = _partitions(admin, "placed")
    assert [list(parts[p].replicas) for p in (0, 1)] == [[3, 1], [2, 3]]
    assert [parts[p].leader for p in (0, 1)] == [3, 2]
    bad = admin.create_topics([NewTopic("unplaceable", 1, replica_assignment=[[1, 1]])])
    assert _error_code(bad["unplaceable"]) == INVALID_REPLICA_ASSIGNMENT
    uneven = admin.create_topics([NewTopic("uneven", 2, replica_assignment=[[1, 2], [3]])])
    assert _error_code(uneven["uneven"]) == INVALID_REPLICA_ASSIGNMENT


def test_preferred_leader_election_moves_leadership_back(three_brokers):
    admin = AdminClient({"bootstrap.servers": three_brokers.bootstrap})
    admin.create_topics([NewTopic("elect", 1, replica_assignment=[[1, 2, 3]])])["elect"].result(10)
    tp = TopicPartition("elect", 0)
    not_needed = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(10)
    assert not_needed[tp].code() == ELECTION_NOT_NEEDED
    three_brokers.stop(1)  # controlled shutdown hands leadership to broker 2
    try:
        wait_until(lambda: _partitions(admin, "elect")[0].leader == 2, 15, "broker 2 to lead")
    finally:
        three_brokers.start(1)
    wait_until(lambda: list(_partitions(admin, "elect")[0].isrs) == [1, 2, 3], 20, "broker 1 back in the ISR")
    assert _partitions(admin, "elect")[0].leader == 2  # auto.leader.rebalance.enable=false
    elected = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(10)
    assert elected[tp] is None
    wait_until(lambda: _partitions(admin, "elect")[0].leader == 1, 10, "broker 1 to lead again")
