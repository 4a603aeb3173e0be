"""DescribeProducers (KIP-664) on real brokerd: idempotent and transactional producers written
by confluent-kafka, described through kafka-python's admin client, agree with the producer
fields of the batches in the log; the open transaction's first offset shows until the commit."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import NotLeaderForPartitionError, UnknownTopicOrPartitionError
from kafka.record import MemoryRecords

from tests.cluster_harness import running_cluster, wait_until
from tests.kafka_helpers import RawClient, create_topic, transactional_producer

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("describe-producers"), 2) as cluster:
        yield cluster


@pytest.fixture
def admin(cluster):
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    yield client
    client.close()


def placement(bootstrap: str, topic: str, partition: int) -> tuple[int, list[int]]:
    """The partition's leader and replicas."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    found = metadata.topics[topic].partitions[partition]
    return found.leader, found.replicas


def batch_producers(cluster, topic: str, partition: int) -> list[tuple[int, int, int]]:
    """(producer id, producer epoch, base offset) of each data batch, read from the leader."""
    leader, _ = placement(cluster.bootstrap, topic, partition)
    raw = RawClient(cluster.ports[leader])
    try:
        _, partitions = raw.fetch_partitions({partition: 0}, 1 << 20, 1 << 20, topic=topic)
    finally:
        raw.close()
    batches, found = MemoryRecords(bytes(partitions[partition].records)), []
    while (batch := batches.next_batch()) is not None:
        if not batch.is_control_batch:
            found.append((batch.producer_id, batch.producer_epoch, batch.base_offset))
    return found


def describe(admin, topic: str, partition: int, broker_id: int | None = None) -> list:
    tp = TopicPartition(topic, partition)
    return admin.describe_producers([tp], broker_id=broker_id)[tp].active_producers


def test_an_idempotent_producer_is_described_by_its_id_epoch_and_last_sequence(cluster, admin):
    create_topic(cluster.bootstrap, "idempotent", 1, 2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "linger.ms": 0})
    for i in range(5):
        producer.produce("idempotent", f"r{i}".encode(), partition=0)
        producer.flush(10)
    [(producer_id, epoch)] = {(pid, e) for pid, e, _ in batch_producers(cluster, "idempotent", 0)}

    [state] = describe(admin, "idempotent", 0)
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (producer_id, epoch, 4)
    assert (state.coordinator_epoch, state.current_transaction_start_offset) == (-1, -1)
    assert state.last_timestamp > 0

    # a follower rebuilt the same state from the replicated batch headers, and answers too
    leader, replicas = placement(cluster.bootstrap, "idempotent", 0)
    [follower] = [r for r in replicas if r != leader]
    assert wait_until(
        lambda: describe(admin, "idempotent", 0, follower) == [state], 10, "the follower's producer state"
    )


def test_an_open_transaction_shows_its_start_offset_until_it_commits(cluster, admin):
    create_topic(cluster.bootstrap, "transactional", 1, 2)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    for value in (b"before-0", b"before-1", b"before-2"):
        plain.produce("transactional", value, partition=0)
    assert plain.flush(10) == 0
    txn = transactional_producer(cluster.bootstrap, "described-producer")
    txn.begin_transaction()
    for i in range(3):
        txn.produce("transactional", f"txn-{i}".encode(), partition=0)
    assert txn.flush(10) == 0

    described = admin.describe_transactions(["described-producer"])["described-producer"]
    [state] = describe(admin, "transactional", 0)
    assert (state.producer_id, state.producer_epoch) == (described.producer_id, described.producer_epoch)
    assert state.current_transaction_start_offset == 3
    assert (described.producer_id, described.producer_epoch, 3) in batch_producers(
        cluster, "transactional", 0
    )

    txn.commit_transaction(20)
    [state] = wait_until(
        lambda: [s for s in describe(admin, "transactional", 0) if s.current_transaction_start_offset == -1],
        10,
        "the commit marker",
    )
    assert state.producer_id == described.producer_id and state.coordinator_epoch >= 0


def test_a_partition_not_hosted_or_not_existing_is_refused_as_kafka_does(cluster, admin):
    create_topic(cluster.bootstrap, "single-replica", 1, 1)
    host, _ = placement(cluster.bootstrap, "single-replica", 0)
    other = next(b for b in cluster.ports if b != host)
    assert describe(admin, "single-replica", 0, host) == []
    with pytest.raises(NotLeaderForPartitionError):
        describe(admin, "single-replica", 0, other)
    with pytest.raises(UnknownTopicOrPartitionError):
        describe(admin, "single-replica", 1, host)
    with pytest.raises(UnknownTopicOrPartitionError):
        describe(admin, "no-such-topic", 0, host)
