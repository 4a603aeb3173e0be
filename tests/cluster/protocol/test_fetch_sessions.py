"""Incremental fetch sessions (KIP-227) on a real brokerd: a full fetch at epoch 0 opens a
session, incremental fetches answer only the partitions that changed and still long-poll,
forgotten partitions stop being answered, wrong epochs and unknown sessions are refused, and a
full cache evicts as Kafka's does. kafka-python's consumer, which uses sessions, reads
everything in order through them."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

from brokerd.fetch_session import CachedPartition, FetchSession, FetchSessionCache, next_epoch
from brokerd.metadata.registration import PartitionRegistration
from brokerd.partition import Partition
from brokerd.replication.fetch_session_handler import FetchSessionHandler
from brokerd.storage.log_config import LogConfig
from brokerd.storage.partition_log import PartitionLog
from tests.brokerd.storage.conftest import records
from tests.cluster_harness import running_cluster, wait_until
from tests.kafka_helpers import RawClient, create_topic, request_partitions, transactional_producer

pytestmark = pytest.mark.interop

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
PARTITIONS = 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("fetch-sessions"), 1) as cluster:
        yield cluster


@pytest.fixture
def topic(broker, request):
    """A fresh topic of PARTITIONS partitions per test."""
    name = request.node.name.replace("test_", "")[:60]
    create_topic(broker.bootstrap, name, PARTITIONS)
    return name


@pytest.fixture
def raw(broker):
    client = RawClient(broker.ports[1])
    yield client
    client.close()


def produce(bootstrap: str, topic: str, partition: int, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(10) == 0


def answered(response) -> dict[int, object]:
    """partition -> its response, over every topic entry of a one-topic response."""
    return {p.partition_index: p for t in response.responses for p in t.partitions}


def values(partition_response) -> list[bytes]:
    return [value for _, _, value in records(partition_response.records)]


def open_session(raw: RawClient, topic: str, offsets: dict[int, int]) -> int:
    _, response = raw.send_fetch({topic: request_partitions(offsets)}, session_epoch=0)
    assert response.error_code == 0 and response.session_id != 0
    assert set(answered(response)) == set(offsets)
    return response.session_id


@pytest.mark.cluster
def test_a_full_fetch_at_epoch_0_opens_a_session_and_answers_every_partition(broker, raw, topic):
    produce(broker.bootstrap, topic, 0, [b"a", b"b"])
    _, response = raw.send_fetch(
        {topic: request_partitions({p: 0 for p in range(PARTITIONS)})}, session_epoch=0
    )
    assert response.error_code == 0 and response.session_id != 0
    partitions = answered(response)
    assert set(partitions) == set(range(PARTITIONS))
    assert values(partitions[0]) == [b"a", b"b"]
    assert [partitions[p].high_watermark for p in range(PARTITIONS)] == [2, 0, 0]


@pytest.mark.cluster
def test_an_incremental_fetch_answers_only_what_changed_and_long_polls(broker, raw, topic):
    produce(broker.bootstrap, topic, 0, [b"a", b"b"])
    session = open_session(raw, topic, {p: 0 for p in range(PARTITIONS)})

    # only partition 0 moves on; nothing else changed, so nothing is answered
    _, response = raw.send_fetch({topic: request_partitions({0: 2})}, session_id=session, session_epoch=1)
    assert (response.error_code, response.session_id, answered(response)) == (0, session, {})

    # new records on partition 1: the partitions left out of the request are still read
    produce(broker.bootstrap, topic, 1, [b"c"])
    _, response = raw.send_fetch({}, max_wait_ms=5000, session_id=session, session_epoch=2)
    partitions = answered(response)
    assert list(partitions) == [1] and values(partitions[1]) == [b"c"]
    assert partitions[1].high_watermark == 1

    # caught up everywhere: the fetch waits for max_wait_ms and answers nothing
    started = time.monotonic()
    _, response = raw.send_fetch(
        {topic: request_partitions({1: 1})}, max_wait_ms=300, session_id=session, session_epoch=3
    )
    assert answered(response) == {} and 0.25 <= time.monotonic() - started < 3

    # ... and wakes when any partition of the session gets records
    later = threading.Timer(0.3, produce, (broker.bootstrap, topic, 2, [b"d"]))
    later.start()
    started = time.monotonic()
    _, response = raw.send_fetch({}, max_wait_ms=10_000, session_id=session, session_epoch=4)
    later.join()
    assert time.monotonic() - started < 5
    partitions = answered(response)
    assert list(partitions) == [2] and values(partitions[2]) == [b"d"]


@pytest.mark.cluster
def test_a_moved_last_stable_offset_is_answered(broker, raw, topic):
    txn = transactional_producer(broker.bootstrap, f"{topic}-txn")
    txn.begin_transaction()
    txn.produce(topic, b"pending", partition=0)
    assert txn.flush(10) == 0
    offsets = request_partitions({p: 0 for p in range(PARTITIONS)})
    _, response = raw.send_fetch({topic: offsets}, isolation_level=1, session_epoch=0)
    session = response.session_id
    assert answered(response)[0].last_stable_offset == 0 and not answered(response)[0].records

    _, response = raw.send_fetch({}, isolation_level=1, session_id=session, session_epoch=1)
    assert answered(response) == {}
    txn.commit_transaction(10)
    _, response = raw.send_fetch({}, max_wait_ms=5000, isolation_level=1, session_id=session, session_epoch=2)
    partitions = answered(response)
    # the committed record, then the commit marker (a control batch)
    assert list(partitions) == [0] and values(partitions[0])[0] == b"pending"
    assert partitions[0].last_stable_offset == partitions[0].high_watermark == 2


@pytest.mark.cluster
def test_forgotten_partitions_are_no_longer_answered_until_added_again(broker, raw, topic):
    session = open_session(raw, topic, {p: 0 for p in range(PARTITIONS)})
    _, response = raw.send_fetch({}, session_id=session, session_epoch=1, forgotten={topic: [2]})
    assert answered(response) == {}

    produce(broker.bootstrap, topic, 2, [b"forgotten"])
    produce(broker.bootstrap, topic, 0, [b"kept"])
    _, response = raw.send_fetch({}, max_wait_ms=5000, session_id=session, session_epoch=2)
    partitions = answered(response)
    assert list(partitions) == [0] and values(partitions[0]) == [b"kept"]

    _, response = raw.send_fetch(
        {topic: request_partitions({2: 0, 0: 1})}, session_id=session, session_epoch=3
    )
    partitions = answered(response)
    assert list(partitions) == [2] and values(partitions[2]) == [b"forgotten"]


@pytest.mark.cluster
def test_forgetting_every_partition_closes_the_session(broker, raw, topic):
    session = open_session(raw, topic, {0: 0})
    _, response = raw.send_fetch({}, session_id=session, session_epoch=1, forgotten={topic: [0]})
    assert (response.error_code, response.session_id) == (0, 0)
    _, response = raw.send_fetch({}, session_id=session, session_epoch=2)
    assert response.error_code == FETCH_SESSION_ID_NOT_FOUND


@pytest.mark.cluster
def test_a_wrong_epoch_is_refused_and_the_session_stays(broker, raw, topic):
    session = open_session(raw, topic, {p: 0 for p in range(PARTITIONS)})
    for wrong in (2, 5):
        _, response = raw.send_fetch({}, session_id=session, session_epoch=wrong)
        assert (response.error_code, response.session_id) == (INVALID_FETCH_SESSION_EPOCH, 0)
        assert answered(response) == {}
    _, response = raw.send_fetch({}, session_id=session, session_epoch=1)
    assert (response.error_code, response.session_id) == (0, session)


@pytest.mark.cluster
def test_an_unknown_session_is_refused(raw, topic):
    _, response = raw.send_fetch({topic: request_partitions({0: 0})}, session_id=12345, session_epoch=1)
    assert (response.error_code, response.session_id, answered(response)) == (
        FETCH_SESSION_ID_NOT_FOUND,
        0,
        {},
    )


@pytest.mark.cluster
def test_a_full_fetch_naming_a_session_closes_it(broker, raw, topic):
    offsets = {p: 0 for p in range(PARTITIONS)}
    first = open_session(raw, topic, offsets)
    # epoch 0 closes the old session and opens a new one
    _, response = raw.send_fetch({topic: request_partitions(offsets)}, session_id=first, session_epoch=0)
    second = response.session_id
    assert second not in (0, first) and set(answered(response)) == set(offsets)
    _, response = raw.send_fetch({}, session_id=first, session_epoch=1)
    assert response.error_code == FETCH_SESSION_ID_NOT_FOUND
    # epoch -1 closes it and fetches sessionless, every partition answered
    _, response = raw.send_fetch({topic: request_partitions(offsets)}, session_id=second, session_epoch=-1)
    assert (response.error_code, response.session_id) == (0, 0)
    assert set(answered(response)) == set(offsets)
    _, response = raw.send_fetch({}, session_id=second, session_epoch=1)
    assert response.error_code == FETCH_SESSION_ID_NOT_FOUND


@pytest.mark.cluster
def test_a_full_cache_evicts_only_idle_sessions(cluster_factory):
    cluster = cluster_factory(
        1,
        {
            "max.incremental.fetch.session.cache.slots": "2",
            "min.incremental.fetch.session.eviction.ms": "1000",
        },
    )
    create_topic(cluster.bootstrap, "evicted", 1)
    raw = RawClient(cluster.ports[1])
    try:
        first = open_session(raw, "evicted", {0: 0})
        second = open_session(raw, "evicted", {0: 0})
        # both sessions are recent: a third fetch gets its answer but no session
        _, response = raw.send_fetch({"evicted": request_partitions({0: 0})}, session_epoch=0)
        assert (response.error_code, response.session_id) == (0, 0)

        time.sleep(1.2)
        _, response = raw.send_fetch({}, session_id=second, session_epoch=1)
        assert response.error_code == 0
        # the first session is now the least recently used and idle past the eviction time
        third = open_session(raw, "evicted", {0: 0})
        _, response = raw.send_fetch({}, session_id=first, session_epoch=1)
        assert response.error_code == FETCH_SESSION_ID_NOT_FOUND
        for session, epoch in ((second, 2), (third, 1)):
            _, response = raw.send_fetch({}, session_id=session, session_epoch=epoch)
            assert (response.error_code, response.session_id) == (0, session)
    finally:
        raw.close()


class Clock:
    def __init__(self) -> None:
        self.now_ms = 0.0

    def __call__(self) -> float:
        return self.now_ms


def cached(count: int) -> list:
    return [SimpleNamespace(topic="t", partition=p, key=("t", p)) for p in range(count)]


@pytest.mark.unit
def test_the_cache_prefers_bigger_and_follower_sessions_once_the_old_ones_are_settled():
    """Kafka's tryEvict, without a broker: a session may push out one with fewer partitions
    (or a consumer's, for a follower), never one created within the eviction time."""
    clock = Clock()
    cache = FetchSessionCache(2, 1000, clock)
    small = cache.maybe_create(False, cached(1))
    big = cache.maybe_create(False, cached(3))
    assert cache.maybe_create(False, cached(5)) == 0  # both too young to go
    follower = cache.maybe_create(True, cached(1))  # a follower may take a consumer's place
    assert follower and len(cache) == 2 and cache.get(small) is None

    clock.now_ms = 900
    cache.touch(cache.get(big))
    cache.touch(cache.get(follower))
    clock.now_ms = 1500  # settled, but neither idle for 1000 ms
    assert cache.maybe_create(False, cached(3)) == 0  # not bigger than the consumer's
    bigger = cache.maybe_create(False, cached(4))
    assert bigger and cache.get(big) is None and cache.get(follower) is not None


@pytest.mark.unit
def test_session_epochs_wrap_to_1():
    assert [next_epoch(e) for e in (0, 1, 2**31 - 1, -1)] == [1, 2, 1, -1]


@pytest.mark.cluster
def test_kafka_python_consumes_through_fetch_sessions_while_producing(broker):
    topic, partitions, count = "kafka-python-sessions", 4, 300
    create_topic(broker.bootstrap, topic, partitions)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        enable_auto_commit=False,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])

    def produce_all():
        """Runs of 15 records to one partition after another, so most incremental responses
        leave some partitions out."""
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for run in range(count // 15):
            p = run % partitions
            for i in range(15):
                producer.produce(topic, f"{p}-{run // partitions * 15 + i}".encode(), partition=p)
            producer.flush(10)
            time.sleep(0.05)
        assert producer.flush(10) == 0

    producing = threading.Thread(target=produce_all)
    producing.start()
    seen: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    sessions = set()
    try:

        def caught_up():
            for tp, messages in consumer.poll(timeout_ms=200).items():
                seen[tp.partition] += [(m.offset, m.value) for m in messages]
            # kafka-python keeps one session handler per broker; it records the session in use
            sessions.update(h.next_metadata.session_id for h in consumer._fetcher._session_handlers.values())
            return sum(len(got) for got in seen.values()) >= count

        wait_until(caught_up, 30, "every record through kafka-python")
    finally:
        producing.join()
        consumer.close()
    assert sessions - {0}, "kafka-python never got a fetch session"
    for p, got in seen.items():
        assert got == [(offset, f"{p}-{offset}".encode()) for offset in range(count // partitions)]


@pytest.mark.unit
def test_a_parked_partition_is_skipped_until_it_changes_and_then_wakes_the_poll():
    """A follower's session reads only unparked partitions; unparking one (its partition
    changed) puts it back and wakes a long-polled fetch; a forgotten one never comes back."""
    session = FetchSession(1, True, [CachedPartition("t", request(p)) for p in range(3)], 0)
    session.park(("t", 0))
    session.park(("t", 2))
    assert [c.key for _, c in session.fetch_data()] == [("t", 1)]
    woken = []
    session.waiters.add(SimpleNamespace(done=lambda: False, set_result=woken.append))
    session.unpark(("t", 2))
    assert [c.key for _, c in session.fetch_data()] == [("t", 1), ("t", 2)] and woken == [None]
    session.update([], [SimpleNamespace(topic="t", partitions=[0])])
    session.unpark(("t", 0))
    assert ("t", 0) not in [c.key for _, c in session.fetch_data()] and not session.is_parked(("t", 0))
    session.park(("t", 1))
    session.update([SimpleNamespace(topic="t", partitions=[request(1)])], [])
    assert ("t", 1) in session.unparked  # named again by the follower: read again


@pytest.mark.unit
def test_a_parked_follower_stays_in_sync_while_its_session_fetches_and_leaves_when_it_stops(tmp_path):
    """A real leader partition: a follower parked on it counts as caught up as of its
    session's last fetch, so the ISR keeps it while the session fetches and drops it once
    the session has not fetched for replica.lag.time.max.ms; an append unparks it."""
    proposals = []
    leader = Partition(
        1,
        "t",
        0,
        PartitionLog.open(tmp_path / "t-0", LogConfig.from_configs({})),
        lambda partition, proposal: proposals.append(proposal.isr),
    )
    leader.update(PartitionRegistration(0, [1, 2], leader=1, leader_epoch=1, isr=[1, 2]))
    leader.record_follower_fetch(2, 0)
    session = FetchSession(1, True, [CachedPartition("t", request(0))], 0)
    assert leader.follower_still_caught_up(2, 0)
    session.park(("t", 0))
    leader.park_idle_follower(2, session)
    now = int(time.time() * 1000)
    leader.followers[2].last_caught_up_ms = now - 60_000
    session.last_fetch_ms = now
    leader.maybe_shrink_isr(30_000)
    assert proposals == []
    session.last_fetch_ms = now - 40_000  # the follower's broker stopped fetching
    leader.maybe_shrink_isr(30_000)
    assert proposals == [[1]]

    leader.update(PartitionRegistration(0, [1, 2], leader=1, leader_epoch=1, isr=[1, 2], partition_epoch=1))
    assert [c.key for _, c in session.fetch_data()] == [("t", 0)]  # the change unparked it
    assert leader.followers[2].last_caught_up_ms == now - 40_000


def request(partition: int) -> SimpleNamespace:
    return SimpleNamespace(
        partition=partition,
        fetch_offset=0,
        log_start_offset=0,
        partition_max_bytes=1 << 20,
        current_leader_epoch=-1,
    )


@pytest.mark.unit
def test_a_follower_session_sends_only_changed_entries_and_forgets_stopped_partitions():
    """The follower's side: a full fetch names every partition; an incremental one only the
    entries that differ from what the leader's session holds, and forgets the partitions
    no longer fetched; a lost session starts over with a full fetch."""
    handler = FetchSessionHandler()
    a, b, c = ("t", 0), ("t", 1), ("t", 2)
    fields, send = handler.request({a: {"fetch_offset": 0}, b: {"fetch_offset": 0}}, set())
    assert fields["session_epoch"] == 0 and set(send) == {a, b}
    assert handler.handle_response(0, 7) and not handler.needs_full_request

    fields, send = handler.request({a: {"fetch_offset": 0}, c: {"fetch_offset": 3}}, {b})
    assert (fields["session_id"], fields["session_epoch"]) == (7, 1)
    assert send == {c: {"fetch_offset": 3}}
    assert fields["forgotten_topics_data"] == [{"topic": "t", "partitions": [1]}]
    assert handler.handle_response(0, 7)

    fields, send = handler.request({a: {"fetch_offset": 0}}, {b})
    assert send == {} and fields["forgotten_topics_data"] == [] and fields["session_epoch"] == 2
    assert not handler.handle_response(INVALID_FETCH_SESSION_EPOCH, 0)
    assert handler.needs_full_request
