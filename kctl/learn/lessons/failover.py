"""Failover, leader epochs and truncation: the leader dies with records its followers never
copied; an in-sync follower takes over with a higher leader epoch; the old leader comes back
and truncates the records the new leader does not have."""

from __future__ import annotations

import time

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show
from kctl.learn.lessons import common

TOPIC = "orders"
# A follower's fetch waits at most this long at the leader (brokerd's replica fetcher); past it,
# a paused follower has no fetch pending that could still carry new records to it.
FOLLOWER_FETCH_WAIT_S = 0.5


def _create(lab: Lab) -> str:
    p = common.replicated_topic(lab, TOPIC, "order {}")
    lab.seen["producer"] = lab.producer(acks="1", enable_idempotence=False)
    lab.seen["producer"].list_topics(TOPIC, timeout=15)  # knows the leader before anything stalls
    return (
        f"topic {TOPIC} on brokers {p['replicas']}, leader {p['leader']} (leader epoch "
        f"{p['leader_epoch']}); 10 records written with acks=all"
    )


def _crash(lab: Lab) -> str:
    leader = lab.seen["old_leader"]
    followers = lab.followers(TOPIC)
    for broker in followers:
        lab.pause(broker)
    try:
        time.sleep(3 * FOLLOWER_FETCH_WAIT_S)
        reports = lab.produce(
            TOPIC, [f"order {i} (acks=1)" for i in range(10, 15)], producer=lab.seen["producer"]
        )
        lab.seen["acked_by_old"] = sum(1 for error, _ in reports if error is None)
        lab.kill(leader)
    finally:
        for broker in followers:
            lab.resume(broker)

    def elected() -> dict | None:
        p = lab.partition(TOPIC)
        return p if p["leader"] not in (leader, -1) else None

    new = lab.wait(elected, "a new leader to be elected")
    lab.seen["new_leader"], lab.seen["new_epoch"] = new["leader"], new["leader_epoch"]
    return (
        f"followers {followers} stalled; leader {leader} acknowledged {lab.seen['acked_by_old']} "
        f"records with acks=1, then was killed (SIGKILL); broker {new['leader']} now leads "
        f"with leader epoch {new['leader_epoch']}"
    )


def _elected(lab: Lab) -> Observed:
    p = lab.partition(TOPIC)
    old = lab.seen["old_leader"]
    held = p["leader"] != old and p["leader_epoch"] > lab.seen["old_epoch"] and p["leader"] in p["isr"]
    return Observed(
        held,
        f"leader {old} -> {p['leader']}, leader epoch {lab.seen['old_epoch']} -> {p['leader_epoch']}, "
        f"ISR {p['isr']}, high watermark {p['high_watermark']}",
    )


def _return(lab: Lab) -> str:
    old = lab.seen["old_leader"]
    lab.restart(old)
    lab.wait(lambda: old in lab.partition(TOPIC)["isr"], f"broker {old} to rejoin the ISR")
    lab.seen["read"] = [m.value() for m in lab.read(TOPIC)]
    read = len(lab.seen["read"])
    return f"broker {old} restarted with its log; back in the ISR; a consumer reads {read} records"


def _truncated(lab: Lab) -> Observed:
    return common.truncated(lab, TOPIC, lab.seen["old_leader"], 15, 10, 10)


def _nothing_committed_lost(lab: Lab) -> Observed:
    read = lab.seen["read"]
    wanted = [f"order {i}".encode() for i in range(10)]
    return Observed(
        read == wanted,
        f"{len(read)} records read: the 10 written with acks=all; the {lab.seen['acked_by_old']} "
        "acknowledged by the old leader alone are gone",
    )


LESSON = Lesson(
    name="failover",
    title="Failover, leader epochs and truncation",
    summary="kill a leader with unreplicated records: a follower takes over, the old leader truncates",
    seeds=("001", "002", "003"),
    brokers=3,
    broker_config={"replica.lag.time.max.ms": "10000", "broker.session.timeout.ms": "6000"},
    steps=(
        Narrate(
            "A leader can die at any moment. We make a topic with 3 replicas, write 10 records with "
            "acks=all, then stall both followers for a second while the leader takes 5 more records "
            "with **acks=1**, and kill the leader (SIGKILL) before anyone copied them."
        ),
        Experiment("create the topic and write 10 records", _create),
        Show("leader and two in-sync followers", TOPIC),
        Ask(
            "The leader is killed. Who takes over?",
            (
                "Any replica of the partition, whichever the controller sees first.",
                "An in-sync follower, elected by the controller, with a higher leader epoch.",
                "Nobody: the partition waits for its leader to come back.",
                "The producer picks the new leader.",
            ),
            "b",
            seed="001",
        ),
        Experiment("stall the followers, write 5 records with acks=1, kill the leader", _crash),
        Show("a new leader, a new leader epoch", TOPIC),
        Check("an in-sync follower became leader with a higher leader epoch", _elected),
        Explain(
            "If one leader for any partition fails, the controller triggers leader election among "
            "follower replicas. A new leader is chosen from the in-sync replicas. Producers/consumers "
            "automatically start using the new leader.",
            "001",
            "The leader epoch is the partition's generation clock: every new leader gets a higher "
            "one, so a replica can tell which leader's log is the current one.",
        ),
        Ask(
            "The old leader comes back with 15 records; the new leader has 10. What happens to the "
            "5 records only the old leader has?",
            (
                "They are copied to the new leader: they were acknowledged.",
                "The old leader truncates them: they were never committed (never below the high "
                "watermark), and it follows the new leader's log.",
                "The old leader takes leadership back, with its longer log.",
                "Both logs keep their own records from offset 10 on.",
            ),
            "b",
            seed="002",
        ),
        Experiment("restart the old leader and read the topic", _return),
        Show("the old leader truncated and back in sync", TOPIC),
        Check("the old leader truncated its divergent tail, 15 -> 10", _truncated),
        Check("every acks=all record survived; the acks=1 records did not", _nothing_committed_lost),
        Explain(
            "Committed to Leader: the producer waits for an acknowledgment from the leader only. In "
            "this case, the record will be lost if the leader crashes immediately after acknowledging "
            "the producer but before the followers have replicated it.",
            "003",
            "No consumer ever saw those 5 records: they were above the high watermark, so dropping "
            "them leaves no non-repeatable read. On its return the old leader asked the new one where "
            "its leader epoch's log ends (OffsetForLeaderEpoch) and cut its own log there.",
        ),
    ),
)
