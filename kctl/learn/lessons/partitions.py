"""Partitions, keys and ordering: records with the same key go to the same partition in the
order they were sent; a topic's partitions are ordered each on its own, not together; a record
is addressed by topic, partition and offset."""

from __future__ import annotations

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "rides"
CITIES = ("paris", "lima", "oslo", "cairo")
ROUNDS = 4


def _sent() -> list[tuple[str, str]]:
    """(key, value) in send order: the cities' rides interleaved, round after round."""
    return [(city, f"{city}-{n}") for n in range(1, ROUNDS + 1) for city in CITIES]


def _write(lab: Lab) -> str:
    lab.create_topic(TOPIC, 3, 1)
    sent = _sent()
    # Java's default partitioner (murmur2 of the key), so any Kafka client would agree
    lab.produce(TOPIC, [v for _, v in sent], keys=[k for k, _ in sent], partitioner="murmur2_random")
    records = lab.read(TOPIC)
    lab.seen["read"] = [
        ((m.key() or b"").decode(), (m.value() or b"").decode(), m.partition(), m.offset()) for m in records
    ]
    return f"topic {TOPIC} with 3 partitions; {len(sent)} rides of {len(CITIES)} cities sent, keyed by city"


def _by_key(lab: Lab) -> Observed:
    read = lab.seen["read"]
    where = {city: sorted({p for k, _, p, _ in read if k == city}) for city in CITIES}
    in_order = all(
        [v for k, v, _, _ in read if k == city] == [f"{city}-{n}" for n in range(1, ROUNDS + 1)]
        for city in CITIES
    )
    held = all(len(parts) == 1 for parts in where.values()) and in_order
    layout = ", ".join(
        f"{city} -> partition {parts[0] if len(parts) == 1 else parts}" for city, parts in where.items()
    )
    return Observed(held, f"{layout}; each city's rides in the order sent: {in_order}")


def _topic_order(lab: Lab) -> Observed:
    read = lab.seen["read"]
    values = [v for _, v, _, _ in read]
    sent = [v for _, v in _sent()]
    used = sorted({p for _, _, p, _ in read})
    held = values != sent and sorted(values) == sorted(sent) and len(used) > 1
    return Observed(
        held,
        f"read partition by partition: {', '.join(values[:6])}, ...; sent: {', '.join(sent[:6])}, ...",
    )


def _offsets(lab: Lab) -> Observed:
    read = lab.seen["read"]
    firsts = {p: min(o for _, _, q, o in read if q == p) for p in {p for _, _, p, _ in read}}
    held = len(firsts) > 1 and all(o == 0 for o in firsts.values())
    ends = {p["partition"]: p["high_watermark"] for p in lab.partitions(TOPIC)}
    return Observed(held, f"first offset per partition {firsts}; high watermarks {ends}")


LESSON = Lesson(
    name="partitions",
    title="Partitions, keys and ordering",
    summary="keyed records keep their partition and order; a topic has no order across partitions",
    seeds=("000", "002", "004"),
    brokers=1,
    broker_config={},
    steps=(
        Narrate(
            "A topic is split into **partitions**, each an ordered log that can live on its own broker. "
            "A producer may give each record a **key**. We make a topic `rides` with 3 partitions and "
            "send the rides of four cities, keyed by city, interleaved: paris-1, lima-1, oslo-1, "
            "cairo-1, paris-2, ..."
        ),
        Ask(
            "Where do paris's rides end up?",
            (
                "Spread over the partitions in turn, to balance the load.",
                "All in one partition, chosen by hashing the key, in the order they were sent.",
                "In whichever partition has the least data at the time.",
            ),
            "b",
            seed="002",
        ),
        Experiment("create the topic and send 16 rides keyed by city", _write),
        Show("the records spread over the partitions", TOPIC, brokers=False),
        Check("every city's rides are in one partition, in the order sent", _by_key),
        Ask(
            "A consumer reads the whole topic. Does it see the rides in the order they were sent?",
            (
                "Yes: the topic keeps the order of everything written to it.",
                "Only per partition: each city's rides in order, but not the interleaving across partitions.",
                "No order at all: not even one city's rides.",
            ),
            "b",
            seed="000",
        ),
        Check("read back partition by partition, the topic's order is not the send order", _topic_order),
        Explain(
            "Ordering of messages is maintained at the partition level, not across the topic. A "
            "producer can add a 'key' to any message it publishes. Kafka guarantees that messages "
            "with the same key are written to the same partition.",
            "000",
            "Here the key is hashed with murmur2, as Java clients do by default (librdkafka's own "
            "default hashes with CRC32), so every client puts a city in the same partition.",
        ),
        Ask(
            "Each partition numbers its records with offsets. What identifies one record?",
            (
                "Its offset: offsets are unique in the topic.",
                "Its topic, partition and offset: every partition counts from 0 on its own.",
                "Its key.",
            ),
            "b",
            seed="002",
        ),
        Check("every partition's offsets start at 0", _offsets),
        Explain(
            "Offset sequences are unique only to each partition. This means, to locate a specific "
            "message, we need to know the Topic, Partition, and Offset number.",
            "000",
        ),
    ),
)
