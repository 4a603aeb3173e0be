"""Helpers for the Spark tests only: records written to and read from a real cluster with
plain librdkafka clients, and a process group (a JVM and its Python workers) killed for good.
Their topics come from tests.kafka_helpers.create_topic, waiting for leaders up to TIMEOUT_S."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition

from tests.cluster_harness import wait_until

TIMEOUT_S = 30.0


def produce(bootstrap: str, topic: str, records: list, partition: int | None = None) -> None:
    """records: values, or (key, value) or (key, value, headers) tuples."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for record in records:
        key, value, headers = _parts(record)
        kwargs = {} if partition is None else {"partition": partition}
        producer.produce(topic, value, key, headers=headers, **kwargs)
    assert producer.flush(TIMEOUT_S) == 0


def _parts(record):
    if isinstance(record, tuple):
        return (*record, None)[:3]
    return None, record, None


def consume_all(bootstrap: str, topic: str) -> list[Message]:
    """Every record up to the high watermark of every partition, as it is now."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tests", "enable.auto.commit": False})
    try:
        meta = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S) for p in meta.partitions
        }
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
        wanted = sum(high - low for low, high in ends.values())
        found: list[Message] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(found) < wanted:
            assert time.monotonic() < deadline, f"only {len(found)} of {wanted} records of {topic}"
            for msg in consumer.consume(wanted - len(found), timeout=0.2):
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                found.append(msg)
        return found
    finally:
        consumer.close()


def values(messages: list[Message]) -> list[bytes]:
    return [m.value() for m in messages]


def kill_group(proc: subprocess.Popen) -> None:
    """A process started in its own session and everything it started (a JVM, Spark's
    Python workers), whatever state the test left them in."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)

    def gone():
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(gone, 30, "the process group to exit")
