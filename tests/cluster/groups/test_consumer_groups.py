"""Consumer groups on real brokers with several confluent-kafka consumers and kcat -G."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.cluster_harness import wait_until
from tests.kafka_helpers import create_topic, settle

pytestmark = pytest.mark.cluster

SESSION = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}


def produce_to_every_partition(bootstrap: str, topic: str, partitions: int, per_partition: int):
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, b"%d-%d" % (p, i), partition=p)
    assert producer.flush(15) == 0


class Member:
    """A group member in this process; remembers its current assignment."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.assigned: set[int] = set()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **SESSION,
            }
        )
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.values: list[bytes] = []

    def _on_assign(self, consumer, partitions):
        self.assigned = {p.partition for p in partitions}

    def _on_revoke(self, consumer, partitions):
        self.assigned = set()

    def poll(self) -> None:
        for msg in self.consumer.consume(100, 0.05):
            if msg.error() is None:
                self.values.append(msg.value())
                try:
                    self.consumer.commit(msg, asynchronous=False)
                except KafkaException:
                    pass  # a rebalance began: the record will be redelivered to its next owner

    def close(self) -> None:
        self.consumer.close()


@pytest.mark.parametrize("count,expected", [(3, [2, 2, 2]), (7, [0, 1, 1, 1, 1, 1, 1])])
def test_partitions_are_shared_out_and_extra_members_stay_idle(cluster, count, expected):
    create_topic(cluster.bootstrap, "shared", 6)
    members = [Member(cluster.bootstrap, f"g{count}", "shared") for _ in range(count)]
    try:

        def balanced():
            sets = [m.assigned for m in members]
            union = set().union(*sets)
            return union == set(range(6)) and sum(map(len, sets)) == 6 and sorted(map(len, sets)) == expected

        settle(members, balanced, f"{count} members to share 6 partitions")
    finally:
        for m in members:
            m.close()


MEMBER_SCRIPT = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer, KafkaException
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    c.subscribe([sys.argv[3]],
                on_assign=lambda c, ps: print("ASSIGNED", len(ps), flush=True))
    while True:
        for m in c.consume(10, 0.1):
            if m.error() is None:
                print(m.value().decode(), flush=True)
                try:
                    c.commit(m, asynchronous=False)
                except KafkaException:
                    pass  # a rebalance began: the record will be redelivered to its next owner
""")


def test_killed_member_hands_its_partitions_over_without_skipping_committed_records(cluster):
    create_topic(cluster.bootstrap, "work", 6)
    produce_to_every_partition(cluster.bootstrap, "work", 6, 20)
    doomed = subprocess.Popen(
        [sys.executable, "-c", MEMBER_SCRIPT, cluster.bootstrap, "crew", "work"],
        stdout=subprocess.PIPE,
        text=True,
    )
    members = []
    try:
        lines = [doomed.stdout.readline()]
        assert lines[0].startswith("ASSIGNED")
        members = [Member(cluster.bootstrap, "crew", "work") for _ in range(2)]
        settle(
            members,
            lambda: len(set().union(*(m.assigned for m in members))) == 4,
            "two more members to take 4 of the 6 partitions",
        )
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(10)
        lines += doomed.stdout.read().splitlines()
        settle(
            members,
            lambda: set().union(*(m.assigned for m in members)) == set(range(6)),
            "the survivors to take over every partition",
            timeout=20,
        )
        settle(
            members,
            lambda: (
                {v.decode() for m in members for v in m.values} | set(lines)
                >= {f"{p}-{i}" for p in range(6) for i in range(20)}
            ),
            "every record to be consumed by someone",
        )
    finally:
        if doomed.poll() is None:
            doomed.kill()
        for m in members:
            m.close()


def test_kcat_balanced_consumer_commits(cluster):
    create_topic(cluster.bootstrap, "kc", 2)
    produce_to_every_partition(cluster.bootstrap, "kc", 2, 10)
    out = subprocess.run(
        [
            "kcat",
            "-b",
            cluster.bootstrap,
            "-G",
            "kgroup",
            "kc",
            "-e",
            "-o",
            "beginning",
            "-f",
            "%s\n",
            "-X",
            "enable.auto.commit=true",
            "-X",
            "auto.commit.interval.ms=100",
        ],
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert sorted(out.stdout.split()) == sorted(b"%d-%d" % (p, i) for p in range(2) for i in range(10))
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kgroup"})
    try:
        committed = consumer.committed([TopicPartition("kc", p) for p in range(2)], 10)
    finally:
        consumer.close()
    assert [tp.offset for tp in committed] == [10, 10]


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return [
            tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 15)
        ]
    finally:
        consumer.close()


def commit(bootstrap: str, group: str, topic: str, offsets: list[int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in enumerate(offsets)], asynchronous=False
        )
    finally:
        consumer.close()


def test_committed_offsets_survive_restarting_every_broker(cluster_factory):
    cluster = cluster_factory(
        3, {"broker.session.timeout.ms": "1500", "leader.imbalance.check.interval.seconds": "1"}
    )
    create_topic(cluster.bootstrap, "kept", 3, 3)
    commit(cluster.bootstrap, "keeper", "kept", [5, 6, 7])
    cluster.stop()
    cluster.start()
    # Preferred leaders take their __consumer_offsets partitions back after a restart, on the
    # controller's imbalance check (every second here); a coordinator lookup made before one
    # has taken over (and loaded the partition) would name a broker that no longer
    # coordinates the group.
    from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC

    def settled():
        status = cluster.state.replica_status()

        def leading(p) -> bool:  # the leader has published its status as leader at this epoch
            own = status.get(p.leader, {}).get((OFFSETS_TOPIC, p.partition), {})
            return "leader_view" in own and own["leader_epoch"] == p.leader_epoch

        records = cluster.state.topics()[OFFSETS_TOPIC].partitions.values()
        return all(p.leader == p.replicas[0] and leading(p) for p in records)

    wait_until(settled, 15, "the preferred leaders of __consumer_offsets to take over")
    assert committed_offsets(cluster.bootstrap, "keeper", "kept", 3) == [5, 6, 7]


def test_committed_offsets_survive_losing_the_coordinators_broker(cluster_factory):
    cluster = cluster_factory(3, {"broker.session.timeout.ms": "1500"})
    create_topic(cluster.bootstrap, "kept", 3, 3)
    commit(cluster.bootstrap, "keeper", "kept", [1, 2, 3])
    from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
    from brokerd.coordinator.records import partition_for

    partition = partition_for("keeper", 10)
    coordinator = cluster.state.topics()[OFFSETS_TOPIC].partitions[partition].leader
    cluster.kill(coordinator)
    wait_until(
        lambda: cluster.state.topics()[OFFSETS_TOPIC].partitions[partition].leader not in (coordinator, -1),
        15,
        "a new coordinator",
    )
    assert committed_offsets(cluster.bootstrap, "keeper", "kept", 3) == [1, 2, 3]
    commit(cluster.bootstrap, "keeper", "kept", [4, 5, 6])
    assert committed_offsets(cluster.bootstrap, "keeper", "kept", 3) == [4, 5, 6]


# Partitions Kafka picks with 10 offsets partitions: abs(String.hashCode) % 10. The hash of
# "orders-consumer" is negative (-1204742690), where abs and a sign-bit mask disagree.
@pytest.mark.parametrize("group,partition", [("fmt", 7), ("orders-consumer", 0)])
def test_offsets_topic_records_use_kafkas_format_and_partitioning(cluster, group, partition):
    from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC

    create_topic(cluster.bootstrap, "anything", 1)
    commit(cluster.bootstrap, group, "anything", [42])
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10)
    assert len(metadata.topics[OFFSETS_TOPIC].partitions) == 10
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "reader"})
    consumer.assign([TopicPartition(OFFSETS_TOPIC, partition, 0)])
    try:
        msgs = wait_until(lambda: consumer.consume(10, 0.2), 15, "the offset commit record")
    finally:
        consumer.close()
    # Offset commit key v1: version, group, topic, partition; value v3 starts version, offset.
    assert msgs[0].key() == (
        b"\x00\x01" + len(group).to_bytes(2, "big") + group.encode() + b"\x00\x08anything\x00\x00\x00\x00"
    )
    assert msgs[0].value()[:10] == b"\x00\x03" + (42).to_bytes(8, "big")


def test_clients_cannot_write_to_the_internal_topics(cluster):
    create_topic(cluster.bootstrap, "t", 1)
    commit(cluster.bootstrap, "g", "t", [1])
    transactional = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "t"})
    transactional.init_transactions(15)  # creates __transaction_state
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "retries": 0})
    metadata = producer.list_topics(timeout=10)
    for internal in ("__consumer_offsets", "__transaction_state"):
        errors = []
        producer.produce(
            internal, b"forged", partition=0, on_delivery=lambda err, _msg, e=errors: e.append(err)
        )
        producer.flush(10)
        assert errors[0] is not None and errors[0].name() == "TOPIC_EXCEPTION", internal
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    described = admin.describe_topics(TopicCollection(["__consumer_offsets", "__transaction_state"]))
    assert all(f.result(10).is_internal for f in described.values())
    assert "__transaction_state" in metadata.topics
