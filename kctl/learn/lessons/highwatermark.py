"""The high-water mark: a record the leader has but an in-sync follower has not copied yet is
not given to consumers; it becomes visible once every in-sync replica has it."""

from __future__ import annotations

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "lesson"


def _create(lab: Lab) -> str:
    lab.create_topic(TOPIC, 1, 3)
    producer = lab.producer(acks="1")
    lab.produce(TOPIC, [f"record {i}" for i in range(10)], producer=producer)
    lab.wait(lambda: lab.partition(TOPIC)["high_watermark"] == 10, "the high watermark to reach 10")
    lab.seen["producer"] = producer
    p = lab.partition(TOPIC)
    lab.seen["leader"], lab.seen["follower"] = p["leader"], lab.followers(TOPIC)[0]
    return (
        f"topic {TOPIC} on brokers {p['replicas']}, leader {p['leader']}; 10 records written and replicated"
    )


def _pause_and_write(lab: Lab) -> str:
    follower, leader = lab.seen["follower"], lab.seen["leader"]
    lab.pause(follower)
    reports = lab.produce(TOPIC, [f"unreplicated {i}" for i in range(5)], producer=lab.seen["producer"])
    acked = sorted(m.offset() or 0 for error, m in reports if error is None)
    lab.wait(
        lambda: lab.partition(TOPIC)["log_end_offsets"][str(leader)] == 15,
        "the leader to publish its log end",
    )
    lab.seen["acked_offsets"] = acked
    return (
        f"broker {follower} paused (SIGSTOP), still in the ISR; 5 records written with acks=1, "
        f"acknowledged by leader {leader} at offsets {acked[0]}..{acked[-1]}"
    )


def _read(lab: Lab) -> str:
    records = lab.read(TOPIC)
    low, high = lab.watermarks(TOPIC)
    lab.seen["read"] = [m.offset() for m in records]
    lab.seen["watermarks"] = (low, high)
    return (
        f"a consumer read {len(records)} records from offset 0; ListOffsets says the partition ends at {high}"
    )


def _stalled(lab: Lab) -> Observed:
    p = lab.partition(TOPIC)
    leader, follower = lab.seen["leader"], lab.seen["follower"]
    ends = p["log_end_offsets"]
    held = p["high_watermark"] == 10 and ends[str(leader)] == 15 and follower in p["isr"]
    return Observed(
        held,
        f"high watermark {p['high_watermark']}; log end of leader {leader}: {ends[str(leader)]}, "
        f"of paused follower {follower}: {ends[str(follower)]}; ISR {p['isr']}",
    )


def _consumer_stopped_at_hwm(lab: Lab) -> Observed:
    read, (_, high) = lab.seen["read"], lab.seen["watermarks"]
    held = read == list(range(10)) and high == 10
    last = read[-1] if read else None
    return Observed(held, f"{len(read)} records read, offsets 0..{last}; end offset {high}")


def _resume(lab: Lab) -> str:
    follower = lab.seen["follower"]
    lab.resume(follower)
    lab.wait(lambda: lab.partition(TOPIC)["high_watermark"] == 15, "the high watermark to reach 15")
    lab.seen["read_after"] = [m.offset() for m in lab.read(TOPIC)]
    return f"broker {follower} resumed; a consumer now reads {len(lab.seen['read_after'])} records"


def _visible(lab: Lab) -> Observed:
    p = lab.partition(TOPIC)
    read = lab.seen["read_after"]
    return Observed(
        p["high_watermark"] == 15 and read == list(range(15)),
        f"high watermark {p['high_watermark']}, ISR {p['isr']}; {len(read)} records read",
    )


LESSON = Lesson(
    name="high-watermark",
    title="The high-water mark: what consumers may read",
    summary="a record the leader has but an in-sync follower lacks is not visible to consumers",
    seeds=("000", "002"),
    brokers=3,
    # Long enough that the paused follower stays in the ISR for the whole lesson.
    broker_config={"replica.lag.time.max.ms": "60000", "broker.session.timeout.ms": "60000"},
    steps=(
        Narrate(
            "Producers write to a partition's **leader**; **followers** copy its log. The "
            "**high watermark** is the highest offset that all in-sync replicas share. We make a "
            "topic with three replicas and write 10 records."
        ),
        Experiment("create the topic and write 10 records", _create),
        Show("10 records on every replica, high watermark 10", TOPIC),
        Ask(
            "Think first: a consumer reads the very latest record from the leader, then the leader "
            "crashes before that record reached any follower, and the new leader does not have it. "
            "What should a leader therefore let consumers read?",
            (
                "Everything it has appended to its log.",
                "Only records every in-sync replica has: up to the high watermark.",
                "Only records it has flushed to disk.",
                "Only records a producer has been told are written.",
            ),
            "b",
            seed="002",
        ),
        Narrate(
            "This cluster waits 60 s before it calls a silent follower out of sync, so a follower we "
            "pause stays in the ISR. We pause one, then write 5 records with **acks=1**: the leader "
            "acknowledges them as soon as they are in its own log."
        ),
        Experiment("pause a follower and write 5 records with acks=1", _pause_and_write),
        Show("the leader ahead of the paused follower; the high watermark held back", TOPIC),
        Check("the high watermark stayed at 10 while the paused follower was in the ISR", _stalled),
        Ask(
            "The leader now has 15 records; the paused in-sync follower has 10. A consumer reads the "
            "partition from offset 0. How many records does it get?",
            ("15", "10", "0: the partition is unavailable", "5: only the newest"),
            "b",
        ),
        Experiment("read the partition from the beginning", _read),
        Check(
            "the consumer got the 10 replicated records and nothing above the high watermark",
            _consumer_stopped_at_hwm,
        ),
        Explain(
            "The leader broker never returns (or exposes) messages which have not been replicated to "
            "a minimum set of ISRs. If a consumer reads the record with offset '7' from the leader, "
            "and later the current leader fails before the record is replicated, the consumer will "
            "not be able to find that message on the new leader: a non-repeatable read. Because of "
            "this possibility, Kafka brokers only return records up to the high-water mark.",
            "000",
        ),
        Ask(
            "We resume the follower. What happens to the 5 records?",
            (
                "The follower copies them, the high watermark moves to 15, and consumers see them.",
                "They are discarded: they were written while a replica was missing.",
                "They stay invisible until the producer sends them again.",
            ),
            "a",
        ),
        Experiment("resume the follower and read again", _resume),
        Show("every replica at 15, the high watermark too", TOPIC),
        Check(
            "once the follower had the records, the high watermark covered them and a consumer read all 15",
            _visible,
        ),
        Explain(
            "The high-water mark is the highest offset replicated to all ISRs. Consumers can only "
            "read up to this point. Everything above it is 'uncommitted' -- it exists on the leader "
            "but hasn't been confirmed by all ISRs.",
            "002",
        ),
    ),
)
