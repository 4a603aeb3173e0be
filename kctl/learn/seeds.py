"""The course notes the lessons are written from, and how a lesson cites them.

Every explanation a lesson gives quotes or paraphrases one of these texts, so a learner can go
back to the notes a lesson stood on. They are numbered as the course numbers them.
"""

from __future__ import annotations

SEEDS: dict[str, str] = {
    "000": "Kafka: Deep Dive (topic partitions, leader, follower, in-sync replicas, high-water mark)",
    "001": "Kafka core concepts (cluster, replication, how data flows, what happens when things fail)",
    "002": "Kafka Deep Dive, with its 'Think first' questions",
    "003": "Kafka: Introduction, a learner's view (consumer groups, the controller, delivery semantics)",
    "004": "How does Kafka work in a nutshell? (topics, partitions, consumer groups)",
}


def cite(seed: str) -> str:
    """'seed 002, Kafka Deep Dive, with its ...': the words a lesson puts after a quote."""
    return f"seed {seed}, {SEEDS[seed]}"
