"""Partition reassignment (KIP-455) on real brokers: a broker is added and partitions move onto
it under an acks=all load, with kafka-python's admin client (a client kctl did not write)."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from tests.cluster_harness import wait_until

pytestmark = pytest.mark.cluster

TOPIC = "moving"
MOVE_TIMEOUT_S = 30


class AcksAllLoad:
    """Produces numbered records to every partition until stopped; remembers what was acked."""

    def __init__(self, bootstrap: str, partitions: int):
        self.partitions = partitions
        self.acked: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked[msg.partition()].append(msg.value())

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            self._producer.produce(
                TOPIC, b"%d" % n, partition=n % self.partitions, on_delivery=self._delivered
            )
            self._producer.poll(0.001)
            n += 1

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._producer.flush(60)


def consume_all(bootstrap: str, partitions: int) -> dict[int, list[bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), 10)[1] for p in range(partitions)}
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}

    def done():
        for m in consumer.consume(1000, 0.2):
            if m.error() is None:
                got[m.partition()].append(m.value())
        return all(len(got[p]) >= ends[p] for p in range(partitions))

    wait_until(done, 30, "every record")
    consumer.close()
    return got


def test_partitions_move_to_an_added_broker_without_losing_acknowledged_records(cluster_factory):
    cluster = cluster_factory(3, start=False)
    cluster.start(1)
    cluster.start(2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics(
        [NewTopic(TOPIC, 2, replica_assignment=[[1, 2], [2, 1]], config={"min.insync.replicas": "2"})]
    )[TOPIC].result(10)
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        with AcksAllLoad(cluster.bootstrap, 2) as load:
            wait_until(lambda: all(len(a) > 100 for a in load.acked.values()), 20, "a load")
            cluster.start(3)  # the added broker
            # Partition 1 loses its leader (2): a new leader is elected from the target.
            moves = {KafkaTopicPartition(TOPIC, 0): [3, 1], KafkaTopicPartition(TOPIC, 1): [3, 1]}
            assert kadmin.alter_partition_reassignments(moves) == {tp: None for tp in moves}
            wait_until(
                lambda: not kadmin.list_partition_reassignments(),
                MOVE_TIMEOUT_S,
                "the reassignments to complete",
            )
            acked_during_move = {p: len(a) for p, a in load.acked.items()}
            wait_until(
                lambda: all(len(load.acked[p]) > acked_during_move[p] + 100 for p in range(2)),
                20,
                "records acked after the move",
            )
        meta = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions
        assert [list(meta[p].replicas) for p in (0, 1)] == [[3, 1], [3, 1]]
        assert all(sorted(meta[p].isrs) == [1, 3] for p in (0, 1))
        broker2_data = cluster.state.broker_dir(2) / "data"
        assert not list(broker2_data.glob(f"{TOPIC}-*"))  # its replicas were deleted
        consumed = consume_all(cluster.bootstrap, 2)
        for p in range(2):
            acked, wanted = load.acked[p], set(load.acked[p])
            assert wanted <= set(consumed[p]), f"partition {p} lost acknowledged records"
            assert [v for v in consumed[p] if v in wanted] == acked  # in order
    finally:
        kadmin.close()


def test_reassignment_errors_are_per_partition(cluster_factory):
    cluster = cluster_factory(2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("still", 1, 2)])["still"].result(10)
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        tp = KafkaTopicPartition("still", 0)
        assert kadmin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
        assert kadmin.alter_partition_reassignments({tp: [1, 7]}) == {tp: InvalidReplicationAssignmentError}
        assert kadmin.list_partition_reassignments() == {}
    finally:
        kadmin.close()
