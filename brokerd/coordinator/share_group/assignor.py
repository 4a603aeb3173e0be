"""Kafka's SimpleAssignor for share groups: a partition may be given to several members at
once (they share its records), so no member is left without work while a topic has fewer
partitions than members subscribe to it."""

from __future__ import annotations

from collections.abc import Mapping

Assignment = dict[str, list[int]]  # topic -> partition indexes


def assign(
    subscriptions: Mapping[str, set[str]], partition_counts: Mapping[str, int]
) -> dict[str, Assignment]:
    """Each member's partitions, from the members' subscribed topics and each existing
    topic's partition count: a topic with fewer partitions than subscribed members gives
    every subscriber every partition; otherwise its partitions are dealt round-robin over
    the subscribers, in member id order, so each partition has exactly one member."""
    result: dict[str, Assignment] = {member: {} for member in subscriptions}
    topics = sorted({t for topics in subscriptions.values() for t in topics if t in partition_counts})
    for topic in topics:
        count = partition_counts[topic]
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if count <= 0 or not members:
            continue
        if count < len(members):
            for member in members:
                result[member][topic] = list(range(count))
        else:
            for partition in range(count):
                result[members[partition % len(members)]].setdefault(topic, []).append(partition)
    return result
