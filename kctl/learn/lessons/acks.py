"""acks=0/1/all and min.insync.replicas: with the ISR below min.insync.replicas the leader
refuses acks=all writes (NOT_ENOUGH_REPLICAS) and appends nothing, while acks=1 and acks=0
writes still go through, on one copy."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "payments"
# One try per record, so the producer reports the leader's answer itself; a real producer
# retries NOT_ENOUGH_REPLICAS (it is retriable) until delivery.timeout.ms runs out.
ONE_TRY: dict[str, Any] = {"retries": 0, "enable_idempotence": False, "message_timeout_ms": 10000}


def _create(lab: Lab) -> str:
    lab.create_topic(TOPIC, 1, 3, min_insync_replicas="2")
    lab.produce(TOPIC, [f"payment {i}" for i in range(10)], acks="all")
    lab.wait(lambda: lab.partition(TOPIC)["high_watermark"] == 10, "10 records replicated")
    p = lab.partition(TOPIC)
    lab.seen["leader"] = p["leader"]
    return (
        f"topic {TOPIC} on brokers {p['replicas']} with min.insync.replicas=2; "
        "10 records written with acks=all"
    )


def _kill_followers(lab: Lab) -> str:
    leader = lab.seen["leader"]
    followers = lab.followers(TOPIC)
    for broker in followers:
        lab.kill(broker)
    lab.wait(lambda: lab.partition(TOPIC)["isr"] == [leader], "the ISR to shrink to the leader")
    lab.seen["end_before"] = lab.partition(TOPIC)["log_end_offsets"][str(leader)]
    reports = lab.produce(TOPIC, ["payment 10"], acks="all", **ONE_TRY)
    error = reports[0][0]
    lab.seen["all_error"] = error
    lab.settle()
    lab.seen["end_after"] = lab.partition(TOPIC)["log_end_offsets"][str(leader)]
    answer = "acknowledged" if error is None else f"refused: {error.name()} ({error.str()})"
    return f"brokers {followers} killed, ISR [{leader}]; one record sent with acks=all: {answer}"


def _refused(lab: Lab) -> Observed:
    error: KafkaError | None = lab.seen["all_error"]
    held = (
        error is not None
        and error.code() == KafkaError.NOT_ENOUGH_REPLICAS
        and lab.seen["end_after"] == lab.seen["end_before"]
    )
    name = "no error" if error is None else error.name()
    return Observed(
        held, f"{name}; leader's log end {lab.seen['end_before']} before, {lab.seen['end_after']} after"
    )


def _weaker_acks(lab: Lab) -> str:
    one = lab.produce(TOPIC, ["payment 11 (acks=1)"], acks="1", **ONE_TRY)
    zero = lab.produce(TOPIC, ["payment 12 (acks=0)"], acks="0", **ONE_TRY)
    lab.seen["one"], lab.seen["zero"] = one[0], zero[0]
    lab.wait(lambda: lab.partition(TOPIC)["high_watermark"] == 12, "the high watermark to reach 12")
    one_said = _report(one[0][0], one[0][1].offset())
    return f"acks=1: {one_said}; acks=0: {_report(zero[0][0], zero[0][1].offset())}"


def _report(error: KafkaError | None, offset: int | None) -> str:
    if error is not None:
        return f"failed, {error.name()}"
    return (
        f"delivered at offset {offset}" if offset is not None and offset >= 0 else "delivered, offset unknown"
    )


def _acks_one(lab: Lab) -> Observed:
    error, message = lab.seen["one"]
    return Observed(error is None and message.offset() == 10, _report(error, message.offset()))


def _acks_zero(lab: Lab) -> Observed:
    error, message = lab.seen["zero"]
    offset = message.offset()
    p = lab.partition(TOPIC)
    held = error is None and (offset is None or offset < 0) and p["high_watermark"] == 12
    return Observed(
        held,
        f"{_report(error, offset)} to the producer; the leader has it all the same: high watermark "
        f"{p['high_watermark']}, ISR {p['isr']}",
    )


LESSON = Lesson(
    name="acks",
    title="acks=0, 1 and all, and min.insync.replicas",
    summary="kill two followers: acks=all is refused with NOT_ENOUGH_REPLICAS, acks=1 and 0 go through",
    seeds=("001", "003"),
    brokers=3,
    broker_config={},
    steps=(
        Narrate(
            "A producer chooses how sure it wants to be with **acks**: 0 (do not wait), 1 (the leader "
            "has it) or all (every in-sync replica has it). A topic's **min.insync.replicas** says how "
            "many in-sync replicas an acks=all write needs. We make a topic with 3 replicas and "
            "min.insync.replicas=2."
        ),
        Experiment("create the topic and write 10 records with acks=all", _create),
        Show("three replicas in sync", TOPIC),
        Ask(
            "Both followers die. The ISR is the leader alone, below min.insync.replicas=2. A producer "
            "sends a record with acks=all. What happens?",
            (
                "It is acknowledged: the leader alone is the whole ISR, and it has the record.",
                "The leader refuses it with NOT_ENOUGH_REPLICAS and does not append it.",
                "The leader appends it and waits until a follower comes back before acknowledging.",
                "The producer switches to acks=1.",
            ),
            "b",
            seed="001",
        ),
        Experiment("kill both followers and send one record with acks=all", _kill_followers),
        Show("the ISR below min.insync.replicas", TOPIC),
        Check(
            "the leader refused the acks=all record with NOT_ENOUGH_REPLICAS and appended nothing", _refused
        ),
        Explain(
            "If acks=all, the producer waits until all in-sync replicas (ISRs) confirm replication, "
            "then it considers the write successful. Use acks=all + min.insync.replicas=2 for "
            "durability: if min.insync.replicas is properly configured and acks=all, no data is lost.",
            "001",
            "Kafka refuses the write rather than accept it on fewer copies than asked for. The "
            "error is retriable: a real producer tries again until its delivery.timeout.ms runs out "
            "(this lesson's producer tries once, to show the leader's own answer).",
        ),
        Ask(
            "At the same moment, another producer sends with acks=1. What happens?",
            (
                "Refused as well: the topic needs 2 in-sync replicas.",
                "Acknowledged once the leader has appended it: min.insync.replicas only applies to acks=all.",
                "It waits for the followers to return.",
            ),
            "b",
        ),
        Ask(
            "And a producer with acks=0: what does its delivery report tell it?",
            (
                "The offset the leader gave the record.",
                "Success as soon as the record is sent, with no offset: it never hears from the broker.",
                "An error, since it did not wait.",
            ),
            "b",
            seed="003",
        ),
        Experiment("send one record with acks=1 and one with acks=0", _weaker_acks),
        Check("acks=1 was acknowledged by the leader alone, with its offset", _acks_one),
        Check("acks=0 was reported delivered without an offset, and the record is in the log", _acks_zero),
        Explain(
            "Async: the producer does not wait for acknowledgment; no guarantee can be made that the "
            "server has received the record. Committed to Leader: the leader will respond without "
            "waiting for acknowledgments from the followers; the record will be lost if the leader "
            "crashes immediately after acknowledging the producer but before the followers have "
            "replicated it. Committed to Leader and Quorum: slowest, but guarantees that the record will "
            "not be lost if at least one in-sync replica remains alive.",
            "003",
            "The records written with acks=1 and acks=0 here exist on one broker only, the leader; "
            "the failover lesson (`kctl learn run failover`) shows such a record lost.",
        ),
    ),
)
