"""Leaders, followers and the ISR: a paused follower leaves the in-sync replicas after
replica.lag.time.max.ms, the high watermark moves on without it, and it rejoins once it has
caught up."""

from __future__ import annotations

import time

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "lesson"
LAG_MS = 3000
# The leader counts a follower's lag from the last fetch that caught it up, which comes before
# the pause: by up to one fetch wait (brokerd's replica fetcher: 500 ms), more on a busy machine.
EARLIEST_S = LAG_MS / 1000 - 1.0


def _create(lab: Lab) -> str:
    lab.create_topic(TOPIC, 1, 3)
    producer = lab.producer(acks="all")
    lab.produce(TOPIC, [f"record {i}" for i in range(10)], producer=producer)
    lab.seen["producer"] = producer  # connected to the leader before anything is paused
    p = lab.partition(TOPIC)
    lab.seen["leader"], lab.seen["follower"] = p["leader"], lab.followers(TOPIC)[0]
    return (
        f"topic {TOPIC}: 1 partition on brokers {p['replicas']}, leader {p['leader']}, "
        f"ISR {p['isr']}; 10 records written with acks=all"
    )


def _pause_and_write(lab: Lab) -> str:
    follower = lab.seen["follower"]
    lab.seen["isr_before"] = lab.partition(TOPIC)["isr"]
    lab.pause(follower)
    paused_at = time.time()
    lab.seen["paused_at"] = paused_at
    began = time.monotonic()
    reports = lab.produce(TOPIC, [f"late {i}" for i in range(5)], producer=lab.seen["producer"])
    lab.seen["ack_s"] = time.monotonic() - began
    lab.seen["acked"] = sum(1 for error, _ in reports if error is None)
    lab.wait(lambda: follower not in lab.partition(TOPIC)["isr"], f"broker {follower} to leave the ISR")
    shrank = lab.wait(lambda: lab.changes("ISR shrank"), "the watch to narrate the ISR shrinking")
    lab.seen["shrank_after_s"] = shrank[0][0] - paused_at
    lab.wait(lambda: lab.partition(TOPIC)["high_watermark"] == 15, "the high watermark to reach 15")
    return (
        f"broker {follower} paused (SIGSTOP); 5 records sent with acks=all, "
        f"{lab.seen['acked']} acknowledged after {lab.seen['ack_s']:.1f} s"
    )


def _shrank(lab: Lab) -> Observed:
    follower, after = lab.seen["follower"], lab.partition(TOPIC)["isr"]
    when = lab.seen["shrank_after_s"]
    held = follower not in after and when is not None and when >= EARLIEST_S
    said = "not narrated" if when is None else f"{when:.1f} s after the pause"
    return Observed(held, f"ISR {lab.seen['isr_before']} -> {after}, {said}")


def _acked_after_shrink(lab: Lab) -> Observed:
    p = lab.partition(TOPIC)
    held = lab.seen["acked"] == 5 and lab.seen["ack_s"] >= EARLIEST_S and p["high_watermark"] == 15
    return Observed(
        held,
        f"5 acks=all records acknowledged {lab.seen['ack_s']:.1f} s after they were sent; "
        f"high watermark {p['high_watermark']} with ISR {p['isr']}",
    )


def _resume(lab: Lab) -> str:
    follower = lab.seen["follower"]
    lab.resume(follower)
    began = time.monotonic()
    lab.wait(lambda: follower in lab.partition(TOPIC)["isr"], f"broker {follower} to rejoin the ISR")
    lab.seen["rejoined_s"] = time.monotonic() - began
    return f"broker {follower} resumed (SIGCONT); back in the ISR {lab.seen['rejoined_s']:.1f} s later"


def _rejoined(lab: Lab) -> Observed:
    follower = lab.seen["follower"]
    p = lab.partition(TOPIC)
    end = p["log_end_offsets"][str(follower)]
    return Observed(
        follower in p["isr"] and end == 15,
        f"ISR {p['isr']}; broker {follower}'s log end {end}, high watermark {p['high_watermark']}",
    )


LESSON = Lesson(
    name="isr",
    title="Leaders, followers and the in-sync replicas (ISR)",
    summary="pause a follower: it leaves the ISR after replica.lag.time.max.ms, and rejoins",
    seeds=("000", "002"),
    brokers=3,
    broker_config={"replica.lag.time.max.ms": str(LAG_MS), "broker.session.timeout.ms": "15000"},
    steps=(
        Narrate(
            "Every partition has one **leader**, which handles all its reads and writes, and "
            "**followers** that copy the leader's log. A follower that has fully caught up is an "
            "**in-sync replica** (ISR); the leader is always one. We make a topic with one partition "
            "and three replicas."
        ),
        Experiment("create the topic and write 10 records", _create),
        Show("one leader, every replica in sync", TOPIC),
        Narrate(
            f"This cluster runs with `replica.lag.time.max.ms={LAG_MS}` (Kafka's default is 30 s): "
            "a follower that has not caught up with the leader for that long is no longer in sync."
        ),
        Ask(
            "We pause one follower (SIGSTOP): its process stays, but it stops fetching. "
            "What happens to the ISR?",
            (
                "Nothing: the follower is still a replica of the partition, so it stays in the ISR.",
                "After replica.lag.time.max.ms without catching up, the leader removes it from the ISR.",
                "The partition goes offline until the follower comes back.",
                "The paused follower is elected leader.",
            ),
            "b",
            seed="002",
        ),
        Ask(
            "While it is paused we write 5 more records with acks=all, which waits for every "
            "in-sync replica. What happens to them and to the high watermark?",
            (
                "They wait until the follower comes back; until then the high watermark stays put.",
                "They wait only until the follower is dropped from the ISR; then the high watermark "
                "moves past them and they are acknowledged.",
                "They are acknowledged at once: the leader alone is enough.",
                "They are refused: a replica is missing.",
            ),
            "b",
            seed="002",
        ),
        Experiment("pause a follower and write 5 records with acks=all", _pause_and_write),
        Show("the paused follower out of the ISR, the high watermark past the new records", TOPIC),
        Check(
            f"the paused follower left the ISR once it had not caught up for replica.lag.time.max.ms "
            f"({LAG_MS} ms, counted from its last fetch before the pause)",
            _shrank,
        ),
        Check(
            "the acks=all records were acknowledged only once the ISR had shrunk, and the high "
            "watermark moved to 15",
            _acked_after_shrink,
        ),
        Explain(
            "An ISR is a replica that has fully caught up with the leader. Only ISRs are eligible to "
            "become the new leader during failover. The ISR set is dynamic -- a slow follower drops "
            "out, and rejoins when it catches up.",
            "002",
            "The high watermark is the highest offset all ISRs share: while the paused follower was "
            "still in the ISR it held the watermark (and acks=all) back; once it was dropped, the "
            "smaller ISR had every record and the watermark moved on.",
        ),
        Ask(
            "We resume the follower. It is 5 records behind. What happens?",
            (
                "It stays out of the ISR until an administrator adds it back.",
                "It fetches the records it missed from the leader and rejoins the ISR.",
                "It takes over as leader, since it was the first replica.",
                "Its log is deleted and copied anew from offset 0.",
            ),
            "b",
        ),
        Experiment("resume the follower", _resume),
        Show("the follower caught up and back in the ISR", TOPIC),
        Check("the follower caught up to the leader's log end and rejoined the ISR", _rejoined),
        Explain(
            "A follower is an in-sync replica only if it has fully caught up to the partition it is "
            "following. In other words, ISRs cannot be behind on the latest records for a given "
            "partition. Only ISRs are eligible to become partition leaders.",
            "000",
        ),
    ),
)
