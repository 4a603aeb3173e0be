"""A network partition: the leader is alive but cut off from its followers and the controller.
acks=all writes wait for followers it cannot reach and fail; acks=1 writes it still takes;
the controller fences it and elects another leader with a higher leader epoch; when the
network heals, the old leader truncates what it took alone: split brain, settled by epochs."""

from __future__ import annotations

from confluent_kafka import KafkaError

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show
from kctl.learn.lessons import common

TOPIC = "payments"
SESSION_TIMEOUT_MS = 3000
ACKS_ALL_TIMEOUT_MS = 4000  # the acks=all write gives up after this long (message.timeout.ms)


def _create(lab: Lab) -> str:
    p = common.replicated_topic(lab, TOPIC, "payment {}", min_insync_replicas="2")
    # Both producers know the leader before the cut, as long-running applications would.
    lab.seen["acks_1"] = lab.producer(acks="1", enable_idempotence=False)
    lab.seen["acks_all"] = lab.producer(acks="all", message_timeout_ms=ACKS_ALL_TIMEOUT_MS)
    for producer in (lab.seen["acks_1"], lab.seen["acks_all"]):
        producer.list_topics(TOPIC, timeout=15)
    return (
        f"topic {TOPIC} on brokers {p['replicas']} with min.insync.replicas=2, leader {p['leader']} "
        f"(leader epoch {p['leader_epoch']}); 10 records written with acks=all"
    )


def _cut(lab: Lab) -> str:
    leader = lab.seen["old_leader"]
    followers = lab.followers(TOPIC)
    lab.isolate(leader, followers)
    all_reports = lab.produce(TOPIC, ["payment 10 (acks=all)"], producer=lab.seen["acks_all"])
    lab.seen["acks_all_failed"] = [e for e, _ in all_reports if e is not None]
    one_reports = lab.produce(
        TOPIC, [f"payment {i} (acks=1)" for i in range(11, 16)], producer=lab.seen["acks_1"]
    )
    lab.seen["acked_alone"] = sum(1 for error, _ in one_reports if error is None)

    def elected() -> dict | None:
        p = lab.partition(TOPIC)
        return p if p["leader"] not in (leader, -1) else None

    new = lab.wait(elected, "the controller to elect a leader without the cut-off one")
    lab.seen["new_leader"], lab.seen["new_epoch"] = new["leader"], new["leader_epoch"]
    failure = lab.seen["acks_all_failed"][0].name() if lab.seen["acks_all_failed"] else "none"
    return (
        f"broker {leader} cut off from brokers {followers} and the controller (nftables); the acks=all "
        f"write failed ({failure}); broker {leader} acknowledged {lab.seen['acked_alone']} records "
        f"with acks=1 alone; the controller fenced it and broker {new['leader']} now leads with "
        f"leader epoch {new['leader_epoch']}"
    )


def _acks_all_refused(lab: Lab) -> Observed:
    failed = lab.seen["acks_all_failed"]
    held = len(failed) == 1 and failed[0].code() in (KafkaError._MSG_TIMED_OUT, KafkaError.REQUEST_TIMED_OUT)
    return Observed(
        held and lab.seen["acked_alone"] == 5,
        f"acks=all: {'not acknowledged (' + failed[0].name() + ')' if failed else 'acknowledged'}; "
        f"acks=1: {lab.seen['acked_alone']} of 5 acknowledged by the cut-off leader",
    )


def _fenced(lab: Lab) -> Observed:
    p = lab.partition(TOPIC)
    old = lab.seen["old_leader"]
    held = p["leader"] != old and p["leader_epoch"] > lab.seen["old_epoch"] and old not in p["isr"]
    return Observed(
        held,
        f"leader {old} -> {p['leader']}, leader epoch {lab.seen['old_epoch']} -> {p['leader_epoch']}, "
        f"ISR {p['isr']}",
    )


def _heal(lab: Lab) -> str:
    old = lab.seen["old_leader"]
    lab.produce(TOPIC, ["payment 16 (new leader)"], acks="all")
    lab.heal()
    lab.wait(lambda: old in lab.partition(TOPIC)["isr"], f"broker {old} to rejoin the ISR", timeout=30)
    lab.seen["read"] = [m.value() for m in lab.read(TOPIC)]
    return (
        f"one more record written with acks=all to the new leader; the network healed; broker {old} "
        f"is back in the ISR; a consumer reads {len(lab.seen['read'])} records"
    )


def _truncated(lab: Lab) -> Observed:
    return common.truncated(lab, TOPIC, lab.seen["old_leader"], 16, 10, 11)


def _only_acks_all_survived(lab: Lab) -> Observed:
    wanted = [f"payment {i}".encode() for i in range(10)] + [b"payment 16 (new leader)"]
    read = lab.seen["read"]
    return Observed(
        read == wanted,
        f"{len(read)} records read: the 10 written before the cut and the one the new leader took; "
        f"the {lab.seen['acked_alone']} the cut-off leader acknowledged alone are gone",
    )


LESSON = Lesson(
    name="partition",
    title="A network partition: the leader cut off, split brain and epochs",
    summary="cut a leader off the network: acks=all fails, acks=1 is lost, epochs settle the split brain",
    seeds=("003", "004"),
    brokers=3,
    broker_config={"broker.session.timeout.ms": str(SESSION_TIMEOUT_MS), "replica.lag.time.max.ms": "10000"},
    steps=(
        Narrate(
            "Kill and pause stop a broker. A network partition does not: the leader stays up, but "
            "its followers and the controller can no longer reach it, while some clients still can. "
            "We make a topic with 3 replicas and min.insync.replicas=2, write 10 records, then cut "
            "the leader off (`kctl broker isolate LEADER --from FOLLOWERS,controller`)."
        ),
        Experiment("create the topic and write 10 records with acks=all", _create),
        Show("a leader and two in-sync followers", TOPIC),
        Ask(
            "The leader is cut off from its followers but still running. A client that reaches it "
            "sends one record with acks=all and five with acks=1. What does the leader do?",
            (
                "It acknowledges all six: it is the leader.",
                "It acknowledges none: a leader that lost its followers stops serving.",
                "It cannot acknowledge the acks=all record (its followers never copy it), but it "
                "acknowledges the five acks=1 records on its own.",
                "It forwards them to the controller.",
            ),
            "c",
            seed="004",
        ),
        Experiment("cut the leader off; write with acks=all and with acks=1", _cut),
        Check(
            "acks=all was never acknowledged; the cut-off leader acknowledged acks=1 alone", _acks_all_refused
        ),
        Show("the controller fenced the cut-off leader", TOPIC),
        Check("another in-sync replica leads, with a higher leader epoch", _fenced),
        Ask(
            "For a few seconds two brokers believed they led the partition. When the network heals, "
            "which log wins?",
            (
                "The longer one: the old leader has more records.",
                "Both are merged, ordered by timestamp.",
                "The one of the higher leader epoch: the old leader truncates what it wrote alone.",
                "The old leader's: it was leader first.",
            ),
            "c",
            seed="003",
        ),
        Experiment("write to the new leader, heal the network, read the topic", _heal),
        Show("the old leader back in sync", TOPIC),
        Check(
            "the old leader truncated the 6 records it took alone (the acks=all one it could not "
            "acknowledge, and the 5 acks=1), 16 -> 10",
            _truncated,
        ),
        Check("every acks=all record survived; the acks=1 records did not", _only_acks_all_survived),
        Explain(
            "Split-brain is commonly solved with a **generation clock**, which is simply a "
            "monotonically increasing number to indicate a server's generation. In Kafka, the "
            "generation clock is implemented through an **epoch number**.",
            "003",
            "The partition's leader epoch rose when the controller elected a leader without the "
            "cut-off one. Back on the network, the old leader learned the new epoch, asked the new "
            "leader where its own epoch's log ends (OffsetForLeaderEpoch) and cut its log there. "
            "Nothing acknowledged with acks=all was lost: the cut-off leader could not acknowledge "
            "any, because min.insync.replicas=2 needed a follower it could not reach.",
        ),
    ),
)
