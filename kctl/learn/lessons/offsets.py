"""Offsets and replay (dumb broker, smart consumer): reading deletes nothing; every consumer
(group) keeps its own position; a consumer replays by seeking back; a group resumes from the
offset it committed."""

from __future__ import annotations

from kctl.kafka import groups
from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "events"


def _write(lab: Lab) -> str:
    lab.create_topic(TOPIC, 1, 1)
    lab.produce(TOPIC, [f"event {i}" for i in range(10)])
    return f"topic {TOPIC} (1 partition); 10 events written, offsets 0..9"


def _two_readers(lab: Lab) -> str:
    first = lab.read_as_group(TOPIC, "analytics", 10)
    second = lab.read_as_group(TOPIC, "audit", 10)
    lab.seen["first"] = [m.offset() for m in first]
    lab.seen["second"] = [m.offset() for m in second]
    return f"group analytics read {len(first)} events; then group audit read {len(second)}"


def _independent(lab: Lab) -> Observed:
    p = lab.partition(TOPIC)
    held = lab.seen["first"] == list(range(10)) == lab.seen["second"] and p["log_start_offset"] == 0
    return Observed(
        held,
        f"analytics read offsets {_span(lab.seen['first'])}, audit read {_span(lab.seen['second'])}; "
        f"the log still starts at {p['log_start_offset']} and ends at {p['high_watermark']}",
    )


def _span(offsets: list[int]) -> str:
    return f"{offsets[0]}..{offsets[-1]}" if offsets else "none"


def _replay(lab: Lab) -> str:
    replayed = lab.read(TOPIC, start=4)
    lab.seen["replayed"] = [m.offset() for m in replayed]
    return f"a consumer asked for offset 4 and got {len(replayed)} events"


def _replayed(lab: Lab) -> Observed:
    return Observed(lab.seen["replayed"] == list(range(4, 10)), f"offsets {_span(lab.seen['replayed'])}")


def _commit_and_resume(lab: Lab) -> str:
    groups.commit_offsets(lab.conn, "analytics", {(TOPIC, 0): 7})
    resumed = lab.read_as_group(TOPIC, "analytics", 3)
    lab.seen["resumed"] = [m.offset() for m in resumed]
    read = _span(lab.seen["resumed"])
    return f"group analytics' offset set to 7; a new member of analytics read offsets {read}"


def _resumed(lab: Lab) -> Observed:
    committed = groups.committed_offsets(lab.conn, "analytics")
    resumed = lab.seen["resumed"]
    return Observed(
        resumed == [7, 8, 9],
        f"first offset read {resumed[0] if resumed else '-'}; analytics' committed offset "
        f"{committed.get((TOPIC, 0))}",
    )


LESSON = Lesson(
    name="offsets",
    title="Offsets and replay: dumb broker, smart consumer",
    summary="reading deletes nothing: two groups read the same records, a consumer replays from any offset",
    seeds=("000", "002"),
    brokers=1,
    broker_config={"offsets.topic.replication.factor": "1"},
    steps=(
        Narrate(
            "Every record in a partition has an **offset**, its position in the log. A consumer asks "
            "for records from an offset on. We write 10 events to a topic with one partition."
        ),
        Experiment("create the topic and write 10 events", _write),
        Ask(
            "Group analytics reads all 10 events. Then group audit starts reading from the beginning. "
            "What does audit get?",
            (
                "Nothing: the broker deleted the events once analytics had read them.",
                "All 10: reading removes nothing, and each group keeps its own position.",
                "Only the events analytics has not committed.",
            ),
            "b",
            seed="002",
        ),
        Experiment("read the topic as group analytics, then as group audit", _two_readers),
        Show("the log untouched by reading", TOPIC, brokers=False),
        Check("both groups read all 10 events and the log still starts at 0", _independent),
        Ask(
            "A consumer wants to process events 4 to 9 again (a replay). What does it take?",
            (
                "Asking the producer to send them again.",
                "Nothing special: it asks for offset 4 and reads on from there.",
                "It cannot: consumed events are gone.",
            ),
            "b",
            seed="002",
        ),
        Experiment("read from offset 4", _replay),
        Check("a consumer that asked for offset 4 got events 4 to 9 again", _replayed),
        Ask(
            "Group analytics' committed offset is set to 7. A new member of analytics starts. Where "
            "does it begin?",
            ("At offset 7: the group's committed offset.", "At offset 0.", "At offset 10, the end."),
            "a",
        ),
        Experiment("commit offset 7 for analytics, start a new member", _commit_and_resume),
        Show("group analytics and its committed offset", TOPIC, group="analytics", brokers=False),
        Check("the new member resumed at the committed offset, 7", _resumed),
        Explain(
            "Kafka follows the principle of a dumb broker and smart consumer. This means that Kafka "
            "does not keep track of what records are read by the consumer. Instead, consumers, "
            "themselves, poll Kafka for new messages and say what records they want to read. This "
            "allows them to increment/decrement the offset they are at as they wish, thus being able "
            "to replay and reprocess messages.",
            "000",
            "What a group commits is only a bookmark, kept for it in the __consumer_offsets topic: the "
            "log stays the same whoever reads it, and is trimmed only by retention.",
        ),
    ),
)
