"""Client-side helpers the integration tests share: topics created, records written and read
back with confluent-kafka, watermarks, DeleteRecords, transactional producers, consumer-group
members polled until they settle, and raw requests (a fetch client over a plain socket, a
broker config set without the admin client).

Starting brokers is tests/cluster_harness.py's job and a single raw request
tests/raw_request.py's; fixtures live in the conftest.py files."""

from __future__ import annotations

import socket
import struct

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, ResourceType
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer import FetchResponse

from brokerd.protocol.codec import RequestHeader, encode_request
from tests.cluster_harness import LocalCluster, wait_until
from tests.raw_request import raw_request

FETCH_VERSION = 11  # the Fetch version RawClient speaks: sessions, isolation levels, no topic ids


def create_topic(
    target: str | LocalCluster | AdminClient,
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    configs: dict[str, str] | None = None,
    *,
    wait_for_leaders: bool = False,
    timeout: float = 10.0,
) -> None:
    """Create one topic; a refusal raises the KafkaException librdkafka gives.

    ``target`` is a bootstrap string, a LocalCluster, or an AdminClient already set up (a
    secured cluster's). With ``wait_for_leaders`` it also waits until every partition has a
    leader: in a LocalCluster's state directory (what partition_record reads) when given one,
    else in the metadata brokers answer the admin client. ``timeout`` bounds each of the two."""
    if isinstance(target, AdminClient):
        admin = target
    else:
        bootstrap = target if isinstance(target, str) else target.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result
    new = NewTopic(name, partitions, replication_factor, config=configs or {})
    admin.create_topics([new], operation_timeout=timeout)[name].result(timeout)
    if not wait_for_leaders:
        return

    def led() -> bool:
        if isinstance(target, LocalCluster):
            return all(p.leader > 0 for p in target.state.topics()[name].partitions.values())
        found = admin.list_topics(name, timeout=timeout).topics[name]
        return found.error is None and all(p.leader >= 0 for p in found.partitions.values())

    wait_until(led, timeout, f"leaders for {name}")


def partition_record(cluster: LocalCluster, topic: str, partition: int = 0):
    """The controller's record of one partition (leader, epoch, replicas, ISR) as the cluster's
    state directory holds it now."""
    return cluster.state.topics()[topic].partitions[partition]


def produce_sync(
    bootstrap: str, topic: str, values: list[bytes], partition: int = 0, **conf
) -> list[tuple[KafkaError | None, int, int]]:
    """Produce ``values`` to one partition without lingering, wait up to 30 s for the
    delivery reports, and return each report's (error or None, partition, offset): for tests
    of what a write gets (acks, ISR, failover), where an error is an outcome, not a failure.
    ``conf`` adds producer settings (acks, idempotence, timeouts)."""
    reports: list[tuple[KafkaError | None, int, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **conf})
    for value in values:
        producer.produce(
            topic,
            value,
            partition=partition,
            on_delivery=lambda err, msg: reports.append((err, msg.partition(), msg.offset())),
        )
    producer.flush(30)
    return reports


def high_watermarks(consumer: Consumer, tps: list[TopicPartition]) -> dict[int, int] | None:
    """Each partition's high watermark, or None while a leader cannot tell it yet (a leader
    just elected answers OFFSET_NOT_AVAILABLE until its high watermark has caught up, KIP-207)."""
    try:
        return {tp.partition: consumer.get_watermark_offsets(tp, 5)[1] for tp in tps}
    except KafkaException as exc:
        if exc.args[0].retriable() or exc.args[0].code() == KafkaError.OFFSET_NOT_AVAILABLE:
            return None
        raise


def consume_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list:
    """(partition, offset, key, value) of every record below each partition's high watermark,
    read from offset 0, once the high watermarks add up to at least ``expected``; fails on a
    record delivered with an error and after 20 s of waiting for either."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
    got = []

    def enough() -> dict[int, int] | None:
        ends = high_watermarks(consumer, tps)
        return ends if ends is not None and sum(ends.values()) >= expected else None

    try:
        ends = wait_until(enough, 20, f"{expected} records below the high watermarks")
        consumer.assign(tps)
        seen = {p: 0 for p in ends}

        def caught_up():
            for msg in consumer.consume(500, 0.2):
                got.append(msg)
                if msg.error() is None:
                    seen[msg.partition()] = msg.offset() + 1
            return all(seen[p] >= end for p, end in ends.items())

        wait_until(caught_up, 20, f"every record of {topic}")
    finally:
        consumer.close()
    for msg in got:
        assert msg.error() is None, msg.error()
    return [(m.partition(), m.offset(), m.key(), m.value()) for m in got]


def watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    """The partition's (low, high) watermarks as its leader answers them now (a
    KafkaException when no leader does within 5 s)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), 5)
    finally:
        consumer.close()


def delete_records(bootstrap: str, topic: str, offset: int, partition: int = 0):
    """DeleteRecords below ``offset`` (-1: the high watermark) through the admin client;
    returns the partition's result (its new low watermark) or raises its KafkaException."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)], request_timeout=10)
    return next(iter(futures.values())).result(15)


def transactional_producer(bootstrap: str, transactional_id: str, **conf) -> Producer:
    """A producer with ``transactional_id``, its transactions initialised (which fences any
    earlier producer of that id), ready for begin_transaction. ``conf`` adds settings."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5, **conf}
    )
    producer.init_transactions(20)
    return producer


def settle(members: list, predicate, what: str, timeout: float = 30) -> None:
    """Keep every group member polling (each has a ``poll()`` that drives its consumer, and so
    its rebalances) until ``predicate()`` holds; fail with ``what`` after ``timeout`` s."""

    def check():
        for m in members:
            m.poll()
        return predicate()

    wait_until(check, timeout, what, interval=0)


def raw_set_broker_config(port: int, broker: str, name: str, value: str):
    """IncrementalAlterConfigs SET of one broker config (``broker`` "" for the cluster-wide
    default) sent to the broker at ``port`` itself; returns the resource's response."""
    return raw_request(
        port,
        ApiKey.IncrementalAlterConfigs,
        0,
        {
            "validate_only": False,
            "resources": [
                {
                    "resource_type": ResourceType.BROKER.value,
                    "resource_name": broker,
                    "configs": [{"name": name, "config_operation": 0, "value": value}],
                }
            ],
        },
    ).responses[0]


def request_partitions(offsets: dict[int, int], partition_max_bytes: int = 1 << 20) -> list[dict]:
    """The Fetch request partitions fetching each of ``offsets`` (partition -> fetch offset)."""
    return [
        {
            "partition": p,
            "current_leader_epoch": -1,
            "fetch_offset": offset,
            "log_start_offset": -1,
            "partition_max_bytes": partition_max_bytes,
        }
        for p, offset in offsets.items()
    ]


class RawClient:
    """Fetch requests (v11) to one broker over a plain socket, for tests that must see the
    broker's own answer: no client retries or leader routing, and each response's size as it
    comes off the wire."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), 10)
        self.correlation_id = 0

    def fetch_partitions(
        self,
        offsets: dict[int, int],
        max_bytes: int,
        partition_max_bytes: int,
        max_wait_ms: int = 0,
        *,
        topic: str,
        isolation_level: int = 0,
    ):
        """Send one sessionless Fetch of ``topic``; returns the response's size and each
        partition's decoded response (asserting none has an error)."""
        size, response = self.send_fetch(
            {topic: request_partitions(offsets, partition_max_bytes)}, max_bytes, max_wait_ms, isolation_level
        )
        found = {}
        for topic_response in response.responses:
            for p in topic_response.partitions:
                assert p.error_code == 0
                found[p.partition_index] = p
        return size, found

    def send_fetch(
        self,
        topics: dict[str, list[dict]],
        max_bytes: int = 1 << 20,
        max_wait_ms: int = 0,
        isolation_level: int = 0,
        session_id: int = 0,
        session_epoch: int = -1,
        forgotten: dict[str, list[int]] | None = None,
    ):
        """Send one Fetch of ``topics`` (name -> request partitions) in or out of a fetch
        session; returns the response's size and the decoded response."""
        self.correlation_id += 1
        header = RequestHeader(ApiKey.Fetch, FETCH_VERSION, self.correlation_id, "raw-fetch")
        self.sock.sendall(
            encode_request(
                header,
                {
                    "replica_id": -1,
                    "max_wait_ms": max_wait_ms,
                    "min_bytes": 1,
                    "max_bytes": max_bytes,
                    "isolation_level": isolation_level,
                    "session_id": session_id,
                    "session_epoch": session_epoch,
                    "topics": [
                        {"topic": name, "partitions": partitions} for name, partitions in topics.items()
                    ],
                    "forgotten_topics_data": [
                        {"topic": name, "partitions": indexes} for name, indexes in (forgotten or {}).items()
                    ],
                    "rack_id": "",
                },
            )
        )
        (size,) = struct.unpack(">i", self._read(4))
        response = FetchResponse.decode(self._read(size), version=FETCH_VERSION, header=True)
        assert response.header.correlation_id == self.correlation_id
        return size, response

    def _read(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            assert chunk, "broker closed the connection"
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()
