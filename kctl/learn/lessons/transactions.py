"""Transactions and exactly once: a transaction's writes to several topics are seen all or not
at all by read_committed consumers; aborted records stay in the log, skipped; an open
transaction holds read_committed consumers at the last stable offset."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPICS = ("payments", "ledger")
COMMITTED: dict[str, Any] = {"isolation_level": "read_committed"}
UNCOMMITTED: dict[str, Any] = {"isolation_level": "read_uncommitted"}
TXN_TIMEOUT_S = 30.0


def _producer(lab: Lab) -> Producer:
    if "producer" not in lab.seen:
        producer = lab.producer(transactional_id="lesson-transfers")
        producer.init_transactions(TXN_TIMEOUT_S)
        lab.seen["producer"] = producer
    return lab.seen["producer"]


def _transaction(lab: Lab, label: str, count: int) -> None:
    producer = _producer(lab)
    producer.begin_transaction()
    for topic in TOPICS:
        for i in range(count):
            producer.produce(topic, f"{label} {i}".encode())
    producer.flush(TXN_TIMEOUT_S)


def _create(lab: Lab) -> str:
    for topic in TOPICS:
        lab.create_topic(topic, 1, 1)
    _producer(lab)
    return f"topics {' and '.join(TOPICS)}; a producer with transactional.id lesson-transfers"


def _abort_then_commit(lab: Lab) -> str:
    producer = _producer(lab)
    _transaction(lab, "aborted", 3)
    producer.abort_transaction(TXN_TIMEOUT_S)
    _transaction(lab, "committed", 2)
    producer.commit_transaction(TXN_TIMEOUT_S)
    for topic in TOPICS:
        lab.seen[f"committed {topic}"] = [(m.value() or b"").decode() for m in lab.read(topic, **COMMITTED)]
        lab.seen[f"uncommitted {topic}"] = [
            (m.value() or b"").decode() for m in lab.read(topic, **UNCOMMITTED)
        ]
    return "3 records to each topic, aborted; then 2 records to each topic, committed"


def _read_committed(lab: Lab) -> Observed:
    seen = {t: lab.seen[f"committed {t}"] for t in TOPICS}
    held = all(v == ["committed 0", "committed 1"] for v in seen.values())
    return Observed(held, "; ".join(f"{t}: {', '.join(v) or 'nothing'}" for t, v in seen.items()))


def _read_uncommitted(lab: Lab) -> Observed:
    seen = {t: lab.seen[f"uncommitted {t}"] for t in TOPICS}
    wanted = [f"aborted {i}" for i in range(3)] + ["committed 0", "committed 1"]
    ends = {p: lab.partition(p)["high_watermark"] for p in TOPICS}
    held = all(v == wanted for v in seen.values())
    return Observed(
        held,
        f"payments: {', '.join(seen['payments'])}; high watermarks {ends} "
        "(each transaction's end is a marker record in the log too)",
    )


def _open(lab: Lab) -> str:
    _transaction(lab, "open", 2)
    lab.wait(
        lambda: lab.partition(TOPICS[0])["open_transactions"], "the leader to publish the open transaction"
    )
    p = lab.partition(TOPICS[0])
    lab.seen["open_view"] = p
    lab.seen["lso_seen"] = lab.watermarks(TOPICS[0], **COMMITTED)[1]
    lab.seen["hwm_seen"] = lab.watermarks(TOPICS[0], **UNCOMMITTED)[1]
    lab.seen["open_read"] = [(m.value() or b"").decode() for m in lab.read(TOPICS[0], **COMMITTED)]
    return (
        f"a third transaction wrote 2 records to each topic and is still open; payments: high "
        f"watermark {lab.seen['hwm_seen']}, last stable offset {lab.seen['lso_seen']}"
    )


def _held_at_lso(lab: Lab) -> Observed:
    p = lab.seen["open_view"]
    first = p["open_transactions"][0]["first_offset"]
    held = lab.seen["lso_seen"] == first < lab.seen["hwm_seen"] and "open 0" not in lab.seen["open_read"]
    return Observed(
        held,
        f"open transaction from offset {first}; read_committed end offset {lab.seen['lso_seen']}, "
        f"high watermark {lab.seen['hwm_seen']}; read_committed read {len(lab.seen['open_read'])} records",
    )


def _commit_open(lab: Lab) -> str:
    _producer(lab).commit_transaction(TXN_TIMEOUT_S)
    lab.seen["after"] = {t: [(m.value() or b"").decode() for m in lab.read(t, **COMMITTED)] for t in TOPICS}
    return "the open transaction committed"


def _all_at_once(lab: Lab) -> Observed:
    after = lab.seen["after"]
    wanted = ["committed 0", "committed 1", "open 0", "open 1"]
    return Observed(
        all(v == wanted for v in after.values()), "; ".join(f"{t}: {', '.join(v)}" for t, v in after.items())
    )


LESSON = Lesson(
    name="transactions",
    title="Transactions and exactly once",
    summary="a transaction over two topics is read all or nothing; an open one holds the last stable offset",
    seeds=("003", "001"),
    brokers=1,
    broker_config={
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    },
    steps=(
        Narrate(
            "A **transactional producer** writes to several partitions (here two topics, `payments` "
            "and `ledger`) and then commits or aborts all of it. Consumers choose with "
            "**isolation.level** whether they see only committed records (read_committed) or everything "
            "(read_uncommitted)."
        ),
        Experiment("create two topics and a transactional producer", _create),
        Ask(
            "A transaction writes 3 records to each topic and is aborted; the next writes 2 to each "
            "and commits. What does a read_committed consumer get from payments?",
            ("All 5.", "The 2 committed records.", "Nothing: the topic had an aborted transaction."),
            "b",
            seed="003",
        ),
        Ask(
            "And a read_uncommitted consumer?",
            (
                "The 2 committed records: aborted ones were deleted.",
                "All 5: aborted records stay in the log; only read_committed consumers skip them.",
                "Only the 3 aborted ones.",
            ),
            "b",
        ),
        Experiment("abort one transaction, commit the next", _abort_then_commit),
        Check("read_committed saw only the committed transaction, in both topics", _read_committed),
        Check("read_uncommitted saw the aborted records too: they are in the log", _read_uncommitted),
        Ask(
            "A third transaction has written 2 records to each topic and is still open. Where does a "
            "read_committed consumer of payments stop?",
            (
                "At the high watermark: the records are replicated.",
                "At the last stable offset, the first offset of the open transaction, until it ends.",
                "It skips the open records and reads on.",
            ),
            "b",
        ),
        Experiment("write in a transaction and leave it open", _open),
        Show("an open transaction holding the last stable offset (LSO) below the high watermark", TOPICS[0]),
        Check("read_committed consumers stopped at the last stable offset", _held_at_lso),
        Experiment("commit it", _commit_open),
        Show("the transaction ended, the LSO caught up", TOPICS[0], brokers=False),
        Check("once committed, the transaction's records appeared in both topics at once", _all_at_once),
        Explain(
            "Exactly-once: the consumer puts the message processing and the offset increment in one "
            "transaction. This will ensure that the offset increment will happen only if the whole "
            "transaction is complete; if it crashes, the transaction will be rolled back. This option "
            "leads to no data duplication and no data loss but can lead to decreased throughput.",
            "003",
            "Use idempotent producers and transactional APIs for exactly-once semantics (seed 001). A "
            "consume-transform-produce loop adds its consumer's offsets to the same transaction "
            "(sendOffsetsToTransaction), so output and progress commit or abort together.",
        ),
    ),
)
