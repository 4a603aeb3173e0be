"""Retention and compaction: reading deletes nothing, time does (retention.ms removes whole old
segments, read or not); a compacted topic keeps the latest record of each key, at its offset."""

from __future__ import annotations

import time

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

CLICKS = "clicks"
PRICES = "prices"
RETENTION_MS = 3000
SEGMENT_MS = 1000


def _retained(lab: Lab) -> str:
    lab.create_topic(CLICKS, 1, 1, retention_ms=str(RETENTION_MS), segment_ms=str(SEGMENT_MS))
    lab.produce(CLICKS, [f"click {i}" for i in range(10)])
    lab.seen["read_before"] = len(lab.read(CLICKS))
    began = time.monotonic()
    lab.wait(lambda: (lab.partition(CLICKS)["log_start_offset"] or 0) > 0, "retention to delete", timeout=30)
    lab.seen["after_s"] = time.monotonic() - began
    lab.seen["read_after"] = len(lab.read(CLICKS))
    reports = lab.produce(CLICKS, ["click 10"])
    lab.seen["next_offset"] = reports[0][1].offset()
    return (
        f"topic {CLICKS} with retention.ms={RETENTION_MS}, segment.ms={SEGMENT_MS}: 10 clicks written "
        f"and read; {lab.seen['after_s']:.1f} s later the log start moved; one more click written"
    )


def _deleted(lab: Lab) -> Observed:
    p = lab.partition(CLICKS)
    held = (
        lab.seen["read_before"] == 10
        and lab.seen["read_after"] == 0
        and p["log_start_offset"] == 10
        and lab.seen["next_offset"] == 10
    )
    return Observed(
        held,
        f"a consumer read {lab.seen['read_before']} clicks before and {lab.seen['read_after']} after; "
        f"log start {p['log_start_offset']}; the next click got offset {lab.seen['next_offset']}",
    )


PRICE_UPDATES = [("apple", "1.10"), ("pear", "2.00"), ("apple", "1.20"), ("plum", "0.80"), ("apple", "1.30")]
PRICE_UPDATES += [("pear", "2.10")]


def _compacted(lab: Lab) -> str:
    lab.create_topic(
        PRICES, 1, 1, cleanup_policy="compact", segment_ms=str(SEGMENT_MS), min_cleanable_dirty_ratio="0.01"
    )
    lab.produce(PRICES, [v for _, v in PRICE_UPDATES], keys=[k for k, _ in PRICE_UPDATES])
    time.sleep(SEGMENT_MS / 1000)
    lab.produce(PRICES, ["0.50"], keys=["kiwi"])  # rolls the segment: the first can be cleaned

    def cleaned() -> list[tuple[str, str, int]] | None:
        records = [
            ((m.key() or b"").decode(), (m.value() or b"").decode(), m.offset() or 0)
            for m in lab.read(PRICES)
        ]
        return records if len(records) < len(PRICE_UPDATES) + 1 else None

    lab.seen["prices"] = lab.wait(cleaned, "the log cleaner to compact the closed segment", timeout=30)
    return f"topic {PRICES} with cleanup.policy=compact: {len(PRICE_UPDATES) + 1} price updates written"


def _latest_per_key(lab: Lab) -> Observed:
    kept = lab.seen["prices"]
    latest = {k: (v, o) for o, (k, v) in enumerate([*PRICE_UPDATES, ("kiwi", "0.50")])}
    wanted = sorted((k, v, o) for k, (v, o) in latest.items())
    held = sorted(kept) == wanted
    said = ", ".join(f"{k}={v}@{o}" for k, v, o in sorted(kept, key=lambda r: r[2]))
    return Observed(held, f"kept (key=value@offset): {said}")


LESSON = Lesson(
    name="retention",
    title="Retention and compaction",
    summary="records leave by age (retention.ms), never by being read; compaction keeps each key's latest",
    seeds=("004", "000"),
    brokers=1,
    broker_config={"log.retention.check.interval.ms": "500", "log.cleaner.backoff.ms": "500"},
    steps=(
        Narrate(
            "Kafka does not delete a record because it was read. Each topic says how long to keep its "
            "records (**retention.ms**), and a partition's log is a series of **segments**, files that "
            f"are closed and a new one opened every segment.ms. Here: retention.ms={RETENTION_MS}, "
            f"segment.ms={SEGMENT_MS}."
        ),
        Ask(
            f"We write 10 clicks and read them. What becomes of them after retention.ms ({RETENTION_MS} ms)?",
            (
                "Nothing: they were read, but Kafka keeps everything until someone deletes the topic.",
                "Their closed segment is deleted once its newest record is older than retention.ms; the "
                "log then starts after them, read or not.",
                "Each record disappears exactly 3 s after it was written, one by one.",
                "They were deleted already, as soon as the consumer read them.",
            ),
            "b",
            seed="004",
        ),
        Experiment("write and read 10 clicks, wait for retention, write one more", _retained),
        Show("retention moved the log start", CLICKS, brokers=False),
        Check(
            "retention deleted read and unread records alike; offsets go on from 10, never reused", _deleted
        ),
        Explain(
            "Events in a topic can be read as often as needed -- unlike traditional messaging systems, "
            "events are not deleted after consumption. Instead, you define for how long Kafka should "
            "retain your events through a per-topic configuration setting, after which old events will "
            "be discarded.",
            "004",
            "Retention deletes whole segments (when all are past retention.ms, the open one is rolled "
            "first), and the log start moves past them; offsets are never reused, so the next record "
            "gets offset 10.",
        ),
        Narrate(
            "A topic can instead be **compacted** (cleanup.policy=compact): the log cleaner rewrites "
            "closed segments, keeping the latest record of each key. We write price updates: apple "
            "three times, pear twice, plum once, then kiwi a second later."
        ),
        Ask(
            "After the cleaner has been through the closed segment, what does a consumer reading from "
            "the beginning get?",
            (
                "Every update, as written: records are immutable.",
                "The latest price of each key, each at its original offset (the offsets have gaps).",
                "The latest price of each key, renumbered from offset 0.",
                "Only the newest update, kiwi.",
            ),
            "b",
        ),
        Experiment("write 7 price updates to a compacted topic and wait for the cleaner", _compacted),
        Check("the compacted topic kept the latest price per key, at its offset", _latest_per_key),
        Explain(
            "Messages once written to partitions are immutable and cannot be updated.",
            "000",
            "Compaction does not change a record: it drops the ones a later record with the same key "
            "made obsolete, and every survivor keeps its offset. A compacted topic is how Kafka keeps "
            "'the latest value per key', e.g. a group's committed offsets in __consumer_offsets.",
        ),
    ),
)
