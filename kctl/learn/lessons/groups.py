"""Consumer groups and rebalancing: partitions are shared out among a group's consumers, one
owner each; a consumer more than partitions stays idle; when an owner leaves, a rebalance
hands its partition to another consumer, which resumes at the group's committed offset."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from kctl.learn.lab import Lab, LessonFailure
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "orders"
GROUP = "billing"
PER_PARTITION = 10
REBALANCE_TIMEOUT_S = 40.0


class Members:
    """The group's consumers, polled in turn from one thread: a rebalance completes only when
    every member polls, and each poll serves its member's assignment changes."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.consumers: dict[str, Consumer] = {}
        self.received: dict[str, list[tuple[int, int]]] = {}  # name -> (partition, offset)

    def join(self, name: str) -> None:
        consumer = self.lab.consumer(group_id=GROUP, client_id=name, auto_offset_reset="earliest")
        consumer.subscribe([TOPIC])
        self.consumers[name] = consumer
        self.received[name] = []

    def leave(self, name: str) -> None:
        self.consumers.pop(name).close()

    def assignments(self) -> dict[str, list[int]]:
        return {n: sorted(tp.partition for tp in c.assignment()) for n, c in self.consumers.items()}

    def poll_until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + REBALANCE_TIMEOUT_S
        while not done():
            if time.monotonic() > deadline:
                raise LessonFailure(f"waited {REBALANCE_TIMEOUT_S:g}s for {what}, in vain")
            for name, consumer in self.consumers.items():
                message = consumer.poll(0.05)
                if message is not None and message.error() is None:
                    self.received[name].append((message.partition() or 0, message.offset() or 0))

    def balanced(self) -> bool:
        """Every partition owned by exactly one member."""
        owned = [p for parts in self.assignments().values() for p in parts]
        return sorted(owned) == [0, 1, 2]

    def close(self) -> None:
        for consumer in self.consumers.values():
            consumer.close()
        self.consumers.clear()


def _members(lab: Lab) -> Members:
    if "members" not in lab.seen:
        lab.seen["members"] = Members(lab)
        lab.on_close(lab.seen["members"].close)
    return lab.seen["members"]


def _create(lab: Lab) -> str:
    lab.create_topic(TOPIC, 3, 1)
    for p in range(3):
        lab.produce(TOPIC, [f"order {p}-{i}" for i in range(PER_PARTITION)], partition=p)
    return f"topic {TOPIC} with 3 partitions; {PER_PARTITION} records in each"


def _first_joins(lab: Lab) -> str:
    members = _members(lab)
    members.join("consumer-1")
    members.poll_until(lambda: members.assignments()["consumer-1"] == [0, 1, 2], "consumer-1's assignment")
    lab.seen["first"] = members.assignments()["consumer-1"]
    return f"consumer-1 joined group {GROUP}: it reads partitions {lab.seen['first']}"


def _all_of_them(lab: Lab) -> Observed:
    return Observed(lab.seen["first"] == [0, 1, 2], f"consumer-1 was assigned {lab.seen['first']}")


def _three_more(lab: Lab) -> str:
    members = _members(lab)
    for name in ("consumer-2", "consumer-3", "consumer-4"):
        members.join(name)
    members.poll_until(
        lambda: members.balanced() and all(len(p) <= 1 for p in members.assignments().values()),
        "the rebalance to settle",
    )
    lab.seen["four"] = members.assignments()
    return "consumer-2, -3 and -4 joined; after the rebalance: " + _layout(lab.seen["four"])


def _layout(assignments: dict[str, list[int]]) -> str:
    return ", ".join(f"{n} {parts if parts else 'idle'}" for n, parts in sorted(assignments.items()))


def _one_idle(lab: Lab) -> Observed:
    four = lab.seen["four"]
    idle = [n for n, parts in four.items() if not parts]
    held = (
        len(four) == 4 and len(idle) == 1 and sorted(p for parts in four.values() for p in parts) == [0, 1, 2]
    )
    return Observed(held, _layout(four))


def _owner_leaves(lab: Lab) -> str:
    members = _members(lab)
    four = lab.seen["four"]
    owners = {parts[0]: n for n, parts in four.items() if parts}
    members.poll_until(
        lambda: all(
            sum(1 for p, _ in members.received[n] if p == part) >= PER_PARTITION for part, n in owners.items()
        ),
        "every owner to read its partition",
    )
    for part, name in owners.items():
        members.consumers[name].commit(
            offsets=[TopicPartition(TOPIC, part, PER_PARTITION)], asynchronous=False
        )
    leaving = owners[0]
    members.leave(leaving)
    lab.produce(TOPIC, [f"order 0-{i}" for i in range(PER_PARTITION, PER_PARTITION + 5)], partition=0)
    members.poll_until(
        lambda: any(p == 0 for n in members.consumers for p, _ in members.received[n] if n != leaving),
        "partition 0 to be read by another member",
    )
    heir = next(n for n in members.consumers if any(p == 0 for p, _ in members.received[n]))
    lab.seen["leaving"], lab.seen["heir"] = leaving, heir
    lab.seen["heir_read"] = [o for p, o in members.received[heir] if p == 0]
    members.poll_until(lambda: len([o for p, o in members.received[heir] if p == 0]) >= 5, "5 new records")
    lab.seen["heir_read"] = [o for p, o in members.received[heir] if p == 0]
    lab.seen["after"] = members.assignments()
    return (
        f"every owner read its {PER_PARTITION} records and committed offset {PER_PARTITION}; {leaving} "
        f"(partition 0) left the group; 5 more records written to partition 0; {heir} read them"
    )


def _handed_over(lab: Lab) -> Observed:
    heir, read = lab.seen["heir"], lab.seen["heir_read"]
    held = 0 in lab.seen["after"][heir] and read == list(range(PER_PARTITION, PER_PARTITION + 5))
    return Observed(
        held,
        f"after the rebalance: {_layout(lab.seen['after'])}; {heir} read partition 0 from offset "
        f"{read[0] if read else '-'} to {read[-1] if read else '-'}",
    )


LESSON = Lesson(
    name="groups",
    title="Consumer groups and rebalancing",
    summary="4 consumers on 3 partitions: one idles; an owner leaves and its partition moves on",
    seeds=("003", "004"),
    brokers=1,
    broker_config={"offsets.topic.replication.factor": "1"},
    steps=(
        Narrate(
            "A **consumer group** is a set of consumers sharing the work of reading a topic. Kafka "
            "makes sure each partition is read by exactly one consumer of the group. We make a topic "
            "with 3 partitions and 10 records in each."
        ),
        Experiment("create the topic and write 30 records", _create),
        Ask(
            "One consumer joins group billing. Which partitions does it read?",
            ("All 3.", "One; the others wait for more consumers.", "None until a second consumer joins."),
            "a",
            seed="003",
        ),
        Experiment("start consumer-1 in group billing", _first_joins),
        Check("a lone consumer was given every partition", _all_of_them),
        Ask(
            "Three more consumers join: 4 consumers, 3 partitions. What happens?",
            (
                "Each partition is split between consumers, so all 4 have work.",
                "A rebalance: 3 consumers get one partition each, and one stays idle.",
                "The fourth consumer is refused.",
                "Nothing changes: consumer-1 keeps every partition.",
            ),
            "b",
            seed="004",
        ),
        Experiment("start consumer-2, -3 and -4", _three_more),
        Show("group billing after the rebalance", TOPIC, group=GROUP, brokers=False),
        Check("each partition has exactly one owner, and the fourth consumer is idle", _one_idle),
        Explain(
            "The number of partitions impacts consumers' maximum parallelism, as there cannot be more "
            "consumers than partitions. Number of consumers in a group > number of partitions: some "
            "consumers will be idle. Kafka uses any unused consumers as failovers.",
            "003",
        ),
        Ask(
            "Every owner reads its partition and commits its offset. Then the owner of partition 0 "
            "leaves, and 5 new records arrive on partition 0. What happens?",
            (
                "Partition 0 goes unread until its owner comes back.",
                "A rebalance hands partition 0 to another consumer, which goes on from the group's "
                "committed offset: it reads the 5 new records and nothing twice.",
                "Another consumer takes partition 0 and reads it again from offset 0.",
                "Every remaining consumer reads partition 0.",
            ),
            "b",
            seed="004",
        ),
        Experiment("commit, stop the owner of partition 0, write 5 records", _owner_leaves),
        Show("group billing after the owner left", TOPIC, group=GROUP, brokers=False),
        Check("partition 0 went to another consumer, which resumed at the committed offset", _handed_over),
        Explain(
            "If you have N + 1 consumers for a topic with N partitions, then the first N consumers "
            "will be assigned a partition, and the remaining consumer will be idle, unless one of the N "
            "consumers fails, then the waiting consumer will be assigned its partition. This is a good "
            "strategy to implement a hot failover.",
            "004",
            "The group's committed offsets live in the __consumer_offsets topic, not in the consumer, "
            "which is why whoever inherits a partition resumes where the group left off.",
        ),
    ),
)
