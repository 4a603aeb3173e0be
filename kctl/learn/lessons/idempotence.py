"""Idempotent producers: a producer that does not hear back in time sends its batch again; without
idempotence the leader appends every attempt, with it the leader knows the producer id and
sequence number it already has and keeps one copy."""

from __future__ import annotations

import time

from kctl.kafka import topics
from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "payments"
REQUEST_TIMEOUT_MS = 1000
STALL_S = 3.5  # the follower's stall: long enough for a few request timeouts and retries


def _create(lab: Lab) -> str:
    lab.create_topic(TOPIC, 1, 3)
    lab.seen["follower"] = lab.followers(TOPIC)[0]
    return f"topic {TOPIC} on brokers {lab.partition(TOPIC)['replicas']}"


def _send_through_a_stall(lab: Lab, value: str, idempotent: bool) -> tuple[int, list[int]]:
    """One record sent with acks=all while a follower in the ISR stalls: the leader appends it
    but cannot acknowledge it, the producer times out and retries. Returns how many copies of
    the record the log holds, and the offsets the producer was told."""
    producer = lab.producer(
        acks="all",
        enable_idempotence=idempotent,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        message_timeout_ms=30000,
    )
    lab.produce(TOPIC, [f"warm-up {value}"], producer=producer)  # connected, producer id known
    follower = lab.seen["follower"]
    told: list[int] = []
    lab.pause(follower)
    try:
        producer.produce(TOPIC, value.encode(), on_delivery=lambda e, m: told.append(m.offset() or -1))
        stall_ends = time.monotonic() + STALL_S
        while time.monotonic() < stall_ends:
            producer.poll(0.1)
    finally:
        lab.resume(follower)
    producer.flush(30)
    copies = sum(1 for m in lab.read(TOPIC) if m.value() == value.encode())
    return copies, told


def _plain(lab: Lab) -> str:
    copies, told = _send_through_a_stall(lab, "payment 1", idempotent=False)
    lab.seen["plain"] = (copies, told)
    return (
        f"broker {lab.seen['follower']} stalled for {STALL_S:g} s; 'payment 1' sent once with "
        f"enable.idempotence=false, acknowledged at offset {_offsets(told)}; the log holds {copies} copies"
    )


def _duplicated(lab: Lab) -> Observed:
    copies, told = lab.seen["plain"]
    return Observed(
        copies > 1 and len(told) == 1, f"{copies} copies of 'payment 1'; {len(told)} acknowledgement"
    )


def _idempotent(lab: Lab) -> str:
    copies, told = _send_through_a_stall(lab, "payment 2", idempotent=True)
    lab.seen["idempotent"] = (copies, told)
    producers = topics.describe_producers(lab.conn, TOPIC, [0])[0]
    lab.seen["producers"] = producers
    return (
        f"'payment 2' sent the same way with enable.idempotence=true, acknowledged at offset "
        f"{_offsets(told)}; the log holds {copies} copy"
    )


def _deduplicated(lab: Lab) -> Observed:
    copies, told = lab.seen["idempotent"]
    producers = lab.seen["producers"]
    known = ", ".join(
        f"producer id {p['producer_id']} epoch {p['producer_epoch']} last sequence {p['last_sequence']}"
        for p in producers
    )
    held = copies == 1 and len(told) == 1 and any(p["last_sequence"] == 1 for p in producers)
    return Observed(held, f"{copies} copy of 'payment 2'; DescribeProducers: {known or 'none'}")


LESSON = Lesson(
    name="idempotence",
    title="Idempotent producers",
    summary="retries through a stalled follower: 4 copies without idempotence, 1 with it",
    seeds=("001", "003"),
    brokers=3,
    # the stalled follower stays in the ISR: the leader has to wait for it
    broker_config={"replica.lag.time.max.ms": "60000", "broker.session.timeout.ms": "60000"},
    steps=(
        Narrate(
            "A producer that hears nothing back within **request.timeout.ms** sends its batch again (it "
            f"retries). Here request.timeout.ms={REQUEST_TIMEOUT_MS}. We write with acks=all while a "
            "follower that is still in the ISR stalls: the leader appends the record at once but cannot "
            "acknowledge it until the follower has it."
        ),
        Experiment("create the topic", _create),
        Ask(
            "The producer (enable.idempotence=false) times out and retries a few times; then the "
            "follower recovers. How many copies of the record does the log hold?",
            (
                "One: the broker ignores a record it already has.",
                "One per attempt: the leader appended every retry as a new record.",
                "None: the first attempt timed out, so everything was discarded.",
            ),
            "b",
            seed="001",
        ),
        Experiment("send one record through a stalled follower, without idempotence", _plain),
        Show("the copies in the log", TOPIC, brokers=False),
        Check("without idempotence the retries were appended as duplicates", _duplicated),
        Explain(
            "If a producer crashes before ACK, the message may be re-sent (possible duplicates). Kafka "
            "provides idempotent producers to avoid duplication.",
            "001",
            "Nothing crashed here: a slow acknowledgement was enough. Each retry reached the leader, "
            "which had no way to know it was the same record.",
        ),
        Ask(
            "Now the same with enable.idempotence=true. What does the leader do with the retries?",
            (
                "Appends them too: a retry is a new request.",
                "Recognises them by the producer id and sequence number it already has, and keeps one copy.",
                "Refuses the producer with an error.",
            ),
            "b",
            seed="001",
        ),
        Experiment("send one record the same way, with idempotence", _idempotent),
        Show("one more copy only", TOPIC, brokers=False),
        Check(
            "with idempotence the leader kept one copy, and knows the producer's last sequence", _deduplicated
        ),
        Explain(
            "Kafka provides idempotent producers to avoid duplication. Retries + idempotency ensure "
            "exactly-once delivery.",
            "001",
            "An idempotent producer gets a producer id (InitProducerId) and numbers its batches per "
            "partition; the leader keeps each producer's last sequences (DescribeProducers shows them, "
            "as `kctl topic producers` does) and answers a repeat with the offset it already gave. The "
            "guarantee holds for one producer session: a restarted producer gets a new id, which is "
            "what transactional.id and transactions are for.",
        ),
    ),
)


def _offsets(told: list[int]) -> str:
    return ", ".join(map(str, told)) or "none"
