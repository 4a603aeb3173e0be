"""Transactions on real brokers with real clients: confluent-kafka (librdkafka), kafka-python
and kcat transactional producers, zombie fencing, timeouts, transactional offset commits and
an exactly-once consume-transform-produce pipeline that survives SIGKILLs."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidProducerEpochError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    ProducerFencedError,
)
from kafka.protocol.api_key import ApiKey

from brokerd.coordinator.records import partition_for
from brokerd.coordinator.transaction_log import TRANSACTION_STATE_TOPIC
from tests.cluster_harness import wait_until
from tests.kafka_helpers import create_topic, transactional_producer
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster

FAST = {"broker.session.timeout.ms": "1500"}


def read_all(bootstrap: str, topic: str, partitions: int, committed: bool = True) -> list[bytes]:
    """Every record of ``topic`` up to the end of each partition (the last stable offset for
    read_committed), as a reader that starts from the beginning sees them."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int] = set()

    def drained():
        for msg in consumer.consume(100, 0.2):
            if msg.error() is None:
                values.append(msg.value())
            elif msg.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
        return len(at_end) == partitions

    try:
        wait_until(drained, 20, f"the end of every partition of {topic}", interval=0)
    finally:
        consumer.close()
    return values


def test_committed_records_are_read_and_aborted_ones_are_not(cluster):
    create_topic(cluster.bootstrap, "out", 2)
    producer = transactional_producer(cluster.bootstrap, "basic")
    producer.begin_transaction()
    for i in range(6):
        producer.produce("out", b"kept-%d" % i, partition=i % 2)
    producer.commit_transaction(20)
    producer.begin_transaction()
    for i in range(6):
        producer.produce("out", b"dropped-%d" % i, partition=i % 2)
    producer.flush(10)
    producer.abort_transaction(20)
    producer.begin_transaction()
    producer.produce("out", b"last", partition=0)
    producer.commit_transaction(20)
    kept = sorted([b"kept-%d" % i for i in range(6)] + [b"last"])
    assert sorted(read_all(cluster.bootstrap, "out", 2)) == kept
    everything = read_all(cluster.bootstrap, "out", 2, committed=False)
    assert sorted(everything) == sorted(kept + [b"dropped-%d" % i for i in range(6)])


def test_a_zombie_producer_is_fenced_by_its_successor(cluster):
    create_topic(cluster.bootstrap, "out", 1)
    zombie = transactional_producer(cluster.bootstrap, "app")
    zombie.begin_transaction()
    zombie.produce("out", b"zombie")
    zombie.flush(10)
    successor = transactional_producer(cluster.bootstrap, "app")  # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce("out", b"successor")
    successor.commit_transaction(20)
    zombie.produce("out", b"zombie-again")
    with pytest.raises(KafkaException) as failure:
        zombie.commit_transaction(10)
    assert failure.value.args[0].fatal()
    assert read_all(cluster.bootstrap, "out", 1) == [b"successor"]


def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(cluster):
    create_topic(cluster.bootstrap, "out", 1)
    producer = transactional_producer(cluster.bootstrap, "slow", **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    producer.produce("out", b"too-late")
    producer.flush(10)

    def no_open_transaction():
        status = cluster.state.replica_status().get(1, {}).get(("out", 0), {})
        return status.get("log_end_offset", 0) >= 2 and status["open_transactions"] == []

    wait_until(no_open_transaction, 10, "the coordinator to abort the transaction")
    with pytest.raises(KafkaException) as failure:
        producer.commit_transaction(10)
    assert failure.value.args[0].fatal()
    assert read_all(cluster.bootstrap, "out", 1) == []
    assert read_all(cluster.bootstrap, "out", 1, committed=False) == [b"too-late"]


def init_producer_id(
    port: int,
    transactional_id: str | None,
    timeout_ms: int = 60_000,
    version: int = 1,
    producer: tuple[int, int] = (-1, -1),
) -> tuple[int, int, int]:
    """One InitProducerId (after a FindCoordinator, which creates __transaction_state):
    (error code, producer id, epoch). From v3 ``producer`` asks to bump that id's epoch."""
    if transactional_id is not None:
        raw_request(port, ApiKey.FindCoordinator, 1, {"key": transactional_id, "key_type": 1})
    response = raw_request(
        port,
        ApiKey.InitProducerId,
        version,
        {
            "transactional_id": transactional_id,
            "transaction_timeout_ms": timeout_ms,
            "producer_id": producer[0],
            "producer_epoch": producer[1],
        },
    )
    return response.error_code, response.producer_id, response.producer_epoch


@pytest.mark.parametrize("timeout_ms", [0, -5, 900_001])
def test_transaction_timeouts_outside_the_maximum_are_refused(cluster, timeout_ms):
    port = cluster.ports[1]
    assert init_producer_id(port, "t", timeout_ms)[0] == InvalidTransactionTimeoutError.errno
    assert init_producer_id(port, "t", 900_000)[0] == 0


def test_a_producer_bumps_its_own_epoch_and_a_retry_is_answered_alike(cluster):
    """KIP-360 (InitProducerId v3+): the current id and epoch are bumped, the epoch just
    bumped from gets the same answer again, anything else is fenced."""
    port = cluster.ports[1]
    error, pid, epoch = init_producer_id(port, "bumper", version=4)
    assert error == 0
    assert init_producer_id(port, "bumper", version=4, producer=(pid, epoch)) == (0, pid, epoch + 1)
    assert init_producer_id(port, "bumper", version=4, producer=(pid, epoch)) == (0, pid, epoch + 1)
    fenced = ProducerFencedError.errno
    assert init_producer_id(port, "bumper", version=4, producer=(pid, epoch + 7))[0] == fenced
    assert init_producer_id(port, "bumper", version=4, producer=(pid + 1, epoch + 1))[0] == fenced
    assert (
        init_producer_id(port, "bumper", version=3, producer=(pid, epoch + 7))[0]
        == InvalidProducerEpochError.errno
    )  # before KIP-588's PRODUCER_FENCED
    assert init_producer_id(port, "bumper", version=4, producer=(pid, -1))[0] == InvalidRequestError.errno
    assert init_producer_id(port, "bumper", version=4) == (0, pid, epoch + 2)  # a new instance
    assert init_producer_id(port, "bumper", version=4, producer=(pid, epoch + 1))[0] == fenced
    error, other, other_epoch = init_producer_id(port, None, version=4, producer=(pid, epoch))
    assert (error, other_epoch) == (0, 0) and other != pid  # idempotent: a new id, as in Kafka


def test_a_transaction_with_timed_out_messages_aborts_and_the_producer_carries_on(cluster_factory):
    """librdkafka must bump its epoch after messages time out in a transaction (KIP-360); a
    broker without it makes the producer fatal. The partition's only replica is paused while
    the transaction coordinator, on another broker, stays up."""
    three = cluster_factory(3)
    producer = transactional_producer(three.bootstrap, "patient", **{"message.timeout.ms": 1000})
    coordinator = transaction_coordinator(three, "patient")
    host = next(b for b in three.ports if b != coordinator)
    admin = AdminClient({"bootstrap.servers": three.bootstrap})
    admin.create_topics([NewTopic("paused", 1, replica_assignment=[[host]])])["paused"].result(10)
    producer.begin_transaction()
    producer.produce("paused", b"first")
    producer.commit_transaction(20)
    assert read_all(three.bootstrap, "paused", 1) == [b"first"]  # its commit marker is written

    failures = []
    three.signal(host, signal.SIGSTOP)
    try:
        producer.begin_transaction()
        producer.produce("paused", b"timed-out", on_delivery=lambda err, _: failures.append(err))
        producer.flush(10)
    finally:
        three.signal(host, signal.SIGCONT)
    assert [f.code() for f in failures] == [KafkaError._MSG_TIMED_OUT]
    with pytest.raises(KafkaException) as failure:
        producer.commit_transaction(20)
    assert failure.value.args[0].txn_requires_abort() and not failure.value.args[0].fatal()
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce("paused", b"second")
    producer.commit_transaction(20)
    assert read_all(three.bootstrap, "paused", 1) == [b"first", b"second"]


def test_librdkafka_reports_an_invalid_transaction_timeout(cluster):
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "transactional.id": "long",
            "transaction.timeout.ms": 900_001,
        }
    )
    with pytest.raises(KafkaException) as failure:
        producer.init_transactions(20)
    assert failure.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT


def test_kafka_python_transactional_producer(cluster):
    create_topic(cluster.bootstrap, "kp", 1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="kp-app")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("kp", b"one")
        producer.send("kp", b"two")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send("kp", b"never")
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(5)
    assert read_all(cluster.bootstrap, "kp", 1) == [b"one", b"two"]


def test_kcat_transactional_producer_commits_at_the_end_of_input(cluster):
    create_topic(cluster.bootstrap, "kc", 1)
    subprocess.run(
        ["kcat", "-P", "-b", cluster.bootstrap, "-t", "kc", "-X", "transactional.id=kcat-app"],
        input=b"a\nb\nc\n",
        check=True,
        timeout=30,
    )
    assert read_all(cluster.bootstrap, "kc", 1) == [b"a", b"b", b"c"]


def test_admin_clients_describe_and_list_transactions(cluster):
    create_topic(cluster.bootstrap, "out", 2)
    producer = transactional_producer(cluster.bootstrap, "described", **{"transaction.timeout.ms": 30000})
    producer.begin_transaction()
    producer.produce("out", b"x", partition=1)
    producer.flush(10)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        ongoing = admin.describe_transactions(["described"])["described"]
        assert (ongoing.state.value, ongoing.transaction_timeout_ms) == ("Ongoing", 30000)
        assert {(tp.topic, tp.partition) for tp in ongoing.topic_partitions} == {("out", 1)}
        listed = admin.list_transactions(state_filters=["Ongoing"])
        assert [t.transactional_id for ts in listed.values() for t in ts] == ["described"]
        producer.commit_transaction(20)
        wait_until(
            lambda: admin.describe_transactions(["described"])["described"].state.value == "CompleteCommit",
            10,
            "the commit to complete",
        )
        assert not [t for ts in admin.list_transactions(state_filters=["Ongoing"]).values() for t in ts]
    finally:
        admin.close()


def committed(
    bootstrap: str, group: str, topic: str, isolation: str = "read_committed", timeout_s: float = 15
) -> int:
    """The group's committed offset; read_committed asks for stable offsets only (KIP-447)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": isolation})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout_s)[0].offset
    finally:
        consumer.close()


def send_offset(producer: Producer, bootstrap: str, group: str, offset: int) -> None:
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer.send_offsets_to_transaction(
            [TopicPartition("in", 0, offset)], metadata.consumer_group_metadata(), 20
        )
    finally:
        metadata.close()


def test_offsets_sent_to_a_transaction_count_only_when_it_commits(cluster):
    """...also after the coordinator reloads its partitions: aborted offsets stay dropped,
    committed ones stay, and those of a transaction still open stay pending until it ends."""
    create_topic(cluster.bootstrap, "in", 1)
    create_topic(cluster.bootstrap, "out", 1)
    producer = transactional_producer(cluster.bootstrap, "offsets-app")
    for offset, end in ((5, producer.commit_transaction), (9, producer.abort_transaction)):
        producer.begin_transaction()
        producer.produce("out", b"%d" % offset)
        send_offset(producer, cluster.bootstrap, "g", offset)
        end(20)
    assert committed(cluster.bootstrap, "g", "in") == 5
    producer.begin_transaction()
    producer.produce("out", b"7")
    send_offset(producer, cluster.bootstrap, "g", 7)
    cluster.stop()
    cluster.start()
    assert committed(cluster.bootstrap, "g", "in", "read_uncommitted") == 5
    with pytest.raises(KafkaException):  # UNSTABLE_OFFSET_COMMIT until the transaction ends
        committed(cluster.bootstrap, "g", "in", timeout_s=2)
    producer.commit_transaction(30)
    assert committed(cluster.bootstrap, "g", "in") == 7
    assert read_all(cluster.bootstrap, "out", 1) == [b"5", b"7"]


WORKER = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer, Producer
    bootstrap, transactional_id = sys.argv[1:3]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 10000})
    producer.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 2000,
                         "heartbeat.interval.ms": 200})
    consumer.subscribe(["in"])
    while True:
        records = [m for m in consumer.consume(20, 0.2) if m.error() is None]
        if not records:
            continue
        producer.begin_transaction()
        for m in records:
            producer.produce("out", m.value().upper(), partition=m.partition())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        print("offsets sent", flush=True)
        producer.commit_transaction(30)
""")

INPUT_CHUNKS = 24
CHUNK = 25
PARTITIONS = 3


class Worker:
    """The consume-transform-produce process, restarted whenever the test kills it."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.proc: subprocess.Popen | None = None
        self.offsets_sent = threading.Event()
        self.kills = 0

    def ensure_running(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", WORKER, self.bootstrap, "eos-worker"],
                stdout=subprocess.PIPE,
                text=True,
            )
            threading.Thread(target=self._watch, args=(self.proc,), daemon=True).start()

    def _watch(self, proc: subprocess.Popen) -> None:
        for _ in proc.stdout:
            self.offsets_sent.set()

    def kill_at_random(self, rng: random.Random) -> None:
        """SIGKILL after a random delay, or just before a commit: the worker has sent its
        offsets to the transaction and is about to send EndTxn."""
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0.1, 1.5))
        else:
            self.offsets_sent.clear()
            self.offsets_sent.wait(5)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.kills += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def transaction_coordinator(cluster, transactional_id: str) -> int:
    topic = cluster.state.topics()[TRANSACTION_STATE_TOPIC]
    return topic.partitions[partition_for(transactional_id, len(topic.partitions))].leader


def test_consume_transform_produce_is_exactly_once_across_sigkills(cluster_factory):
    """Input arrives while the worker is SIGKILLed at random moments and the transaction
    coordinator's broker is SIGKILLed (and restarted) once; a read_committed reader of the
    output then sees every input record exactly once."""
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    cluster = cluster_factory(3, FAST)
    create_topic(cluster.bootstrap, "in", PARTITIONS, 3)
    create_topic(cluster.bootstrap, "out", PARTITIONS, 3)
    source = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    worker = Worker(cluster.bootstrap)
    killed_broker = None
    sent = []
    try:
        for chunk in range(INPUT_CHUNKS):
            values = [b"r%d-%d" % (chunk, i) for i in range(CHUNK)]
            for i, value in enumerate(values):
                source.produce("in", value, partition=i % PARTITIONS)
            assert source.flush(15) == 0
            sent += values
            worker.ensure_running()
            if chunk == INPUT_CHUNKS // 3:
                killed_broker = transaction_coordinator(cluster, "eos-worker")
                cluster.kill(killed_broker)
            elif chunk == 2 * INPUT_CHUNKS // 3:
                cluster.start(killed_broker)
            elif chunk % 4 == 2:
                worker.kill_at_random(rng)
        worker.ensure_running()
        ends = Counter(i % PARTITIONS for i in range(CHUNK))
        expected = [TopicPartition("in", p, INPUT_CHUNKS * ends[p]) for p in range(PARTITIONS)]
        watcher = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "eos"})
        try:
            wait_until(
                lambda: (
                    [tp.offset for tp in watcher.committed(expected, 5)] == [tp.offset for tp in expected]
                ),
                40,
                f"the worker to commit every input offset (seed {seed})",
                interval=0.2,
            )
        finally:
            watcher.close()
    finally:
        worker.stop()
    output = read_all(cluster.bootstrap, "out", PARTITIONS)
    counts = Counter(output)
    assert not [v for v, n in counts.items() if n > 1], f"duplicates (seed {seed})"
    assert sorted(output) == sorted(v.upper() for v in sent), f"lost records (seed {seed})"
    assert worker.kills >= 4 and killed_broker is not None


def test_a_new_coordinator_completes_a_commit_its_predecessor_died_in(cluster_factory):
    """The coordinator dies right after PrepareCommit while the output partition's leader is
    paused, so no marker can have been written: the broker that takes over its
    __transaction_state partition must finish the commit."""
    cluster = cluster_factory(
        3, {**FAST, "transaction.state.log.replication.factor": "2", "transaction.state.log.min.isr": "1"}
    )
    create_topic(cluster.bootstrap, "out", 1, 3)
    leader = cluster.state.topics()["out"].partitions[0].leader
    transactional_producer(cluster.bootstrap, "probe")  # creates __transaction_state
    partitions = cluster.state.topics()[TRANSACTION_STATE_TOPIC].partitions
    transactional_id = next(
        t
        for t in (f"app-{i}" for i in range(100))
        if leader not in partitions[partition_for(t, len(partitions))].replicas
    )
    producer = transactional_producer(cluster.bootstrap, transactional_id)
    producer.begin_transaction()
    producer.produce("out", b"decided")
    producer.flush(10)
    coordinator = transaction_coordinator(cluster, transactional_id)
    wait_until(
        lambda: cluster.state.replica_status().get(leader, {}).get(("out", 0), {}).get("open_transactions"),
        5,
        "the leader of out-0 to publish the open transaction",
    )
    cluster.signal(leader, signal.SIGSTOP)
    try:
        producer.commit_transaction(20)  # answered once PrepareCommit is in the log
        cluster.kill(coordinator)
        wait_until(
            lambda: cluster.state.topics()["out"].partitions[0].leader not in (leader, coordinator, -1),
            15,
            "a new leader of out-0",
        )
    finally:
        cluster.signal(leader, signal.SIGCONT)
    assert read_all(cluster.bootstrap, "out", 1) == [b"decided"]
