"""SIGKILL in the middle of a produce load: everything acknowledged survives the restart."""

from __future__ import annotations

import os
import signal
import struct
import threading

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.cluster_harness import wait_until
from tests.kafka_helpers import consume_all, create_topic

pytestmark = pytest.mark.cluster


def test_sigkill_during_produce_loses_nothing_acknowledged(cluster):
    create_topic(cluster.bootstrap, "durable", 2)
    acked: dict[bytes, tuple[int, int]] = {}
    stop = threading.Event()

    def load():
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 3000,
                "enable.idempotence": True,
            }
        )

        def on_delivery(err, msg):
            if err is None:
                acked[msg.value()] = (msg.partition(), msg.offset())

        i = 0
        while not stop.is_set():
            try:
                producer.produce("durable", b"r%08d" % i, on_delivery=on_delivery)
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
                continue
            i += 1
            if i % 200 == 0:
                producer.poll(0.001)
        producer.flush(5)

    thread = threading.Thread(target=load)
    thread.start()
    try:
        wait_until(lambda: len(acked) > 5000, 30, "5000 acknowledged records")
        cluster.signal(1, signal.SIGKILL)
        cluster.procs[1].wait(10)
    finally:
        stop.set()
        thread.join(30)
    acked_at_kill = dict(acked)

    cluster.start(1)
    # CPU seconds, not wall: in a parallel run the wall clock also counts other tests' work
    assert broker_cpu_seconds(cluster.procs[1].pid) < 2, "restart took too long (it takes ~0.35 s here)"

    consumed = consume_all(cluster.bootstrap, "durable", 2, len(acked_at_kill))
    by_value = {value: (part, offset) for part, offset, _, value in consumed}
    missing = [v for v in acked_at_kill if v not in by_value]
    assert not missing, f"{len(missing)} acknowledged records lost"
    for value, position in acked_at_kill.items():
        assert by_value[value] == position
    for p in range(2):
        offsets = [o for part, o, _, _ in consumed if part == p]
        assert offsets == list(range(len(offsets))), "gaps or duplicates after recovery"


def valid_end(data: bytes) -> int:
    """Where the last whole batch ends: walk batch lengths (a preallocated tail is zeros)."""
    pos = 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length <= 0:
            break
        pos += 12 + length
    return pos


def test_torn_tail_is_truncated_on_restart(cluster):
    create_topic(cluster.bootstrap, "torn", 1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    for i in range(10):
        producer.produce("torn", b"ok%d" % i)
        producer.flush(10)
    cluster.kill(1)
    segment = sorted((cluster.state.broker_dir(1) / "data" / "torn-0").glob("*.log"))[-1]
    data = segment.read_bytes()
    end = valid_end(data)
    # A torn write: the first half of a copy of the last batch, after the valid data.
    with open(segment, "r+b") as f:
        f.seek(end)
        f.write(bytes(data[:40]))
    cluster.start(1)
    consumed = consume_all(cluster.bootstrap, "torn", 1, 10)
    assert [v for _, _, _, v in consumed] == [b"ok%d" % i for i in range(10)]
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition("torn", 0), 10) == (0, 10)
    finally:
        consumer.close()


def broker_cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far (/proc/PID/stat utime + stime)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
