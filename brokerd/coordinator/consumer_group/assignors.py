"""The server-side assignors of KIP-848: ``uniform`` (Kafka's UniformAssignor, the default)
and ``range`` (Kafka's RangeAssignor), chosen by the member's ServerAssignor or the broker's
``group.consumer.assignors`` (its first entry is the default).

Both are pure functions of the members' subscriptions, the topics' partition counts and the
previous target assignment, so they can be tested on their own and every coordinator
computes the same answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from brokerd.coordinator.consumer_group.model import Assignment


@dataclass(frozen=True)
class MemberSubscription:
    member_id: str
    topic_ids: frozenset[uuid.UUID]


# topic id -> number of partitions
TopicPartitionCounts = Mapping[uuid.UUID, int]
Assignor = Callable[
    [list[MemberSubscription], TopicPartitionCounts, Mapping[str, Assignment]], dict[str, Assignment]
]


def uniform(
    members: list[MemberSubscription],
    topics: TopicPartitionCounts,
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """Spread every subscribed partition so that members' counts differ by at most one
    (among members with the same subscriptions), keeping each partition where it was when
    that stays balanced: a rebalance moves as few partitions as it can."""
    members = sorted(members, key=lambda m: m.member_id)
    result: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    counts = {m.member_id: 0 for m in members}
    subscribers: dict[uuid.UUID, list[str]] = {}
    for member in members:
        for topic_id in member.topic_ids:
            if topic_id in topics:
                subscribers.setdefault(topic_id, []).append(member.member_id)
    total = sum(topics[t] for t in subscribers)
    # Members sharing subscriptions share partitions evenly; with one subscription for all
    # (the usual case) this is ceil(total / members).
    quota = {
        m.member_id: -(-sum(topics[t] for t in m.topic_ids if t in topics) // max(1, _sharing(m, members)))
        for m in members
    }
    if members and total:
        even = -(-total // len(members))
        quota = {m: min(q, even) if _homogeneous(members) else q for m, q in quota.items()}
    unassigned: list[tuple[uuid.UUID, int]] = []
    for topic_id in sorted(subscribers, key=str):
        for partition in range(topics[topic_id]):
            owner = next(
                (
                    member_id
                    for member_id, assignment in previous.items()
                    if partition in assignment.get(topic_id, ())
                ),
                None,
            )
            if owner in result and owner in subscribers[topic_id] and counts[owner] < quota[owner]:
                result[owner].setdefault(topic_id, set()).add(partition)
                counts[owner] += 1
            else:
                unassigned.append((topic_id, partition))
    for topic_id, partition in unassigned:
        owner = min(subscribers[topic_id], key=lambda m: (counts[m], m))
        result[owner].setdefault(topic_id, set()).add(partition)
        counts[owner] += 1
    _balance(result, counts, subscribers)
    return {m: {t: frozenset(p) for t, p in a.items() if p} for m, a in result.items()}


def _sharing(member: MemberSubscription, members: list[MemberSubscription]) -> int:
    return sum(1 for m in members if m.topic_ids == member.topic_ids)


def _homogeneous(members: list[MemberSubscription]) -> bool:
    return len({m.topic_ids for m in members}) <= 1


def _balance(
    result: dict[str, dict[uuid.UUID, set[int]]],
    counts: dict[str, int],
    subscribers: Mapping[uuid.UUID, list[str]],
) -> None:
    """Move single partitions from the fullest member to the emptiest one that may take it
    until no move narrows the gap (bounded by the number of partitions)."""
    for _ in range(sum(counts.values()) + 1):
        moved = False
        for giver in sorted(counts, key=lambda m: (-counts[m], m)):
            for topic_id in sorted(result[giver], key=str):
                takers = [m for m in subscribers[topic_id] if counts[m] + 1 < counts[giver]]
                if takers and result[giver][topic_id]:
                    taker = min(takers, key=lambda m: (counts[m], m))
                    partition = max(result[giver][topic_id])
                    result[giver][topic_id].discard(partition)
                    result[taker].setdefault(topic_id, set()).add(partition)
                    counts[giver] -= 1
                    counts[taker] += 1
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def range_(
    members: list[MemberSubscription],
    topics: TopicPartitionCounts,
    previous: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """Per topic, its partitions in contiguous ranges over the members subscribed to it in
    member id order, the first ``partitions % members`` getting one more; topics with the
    same partition count are thus co-partitioned (partition n of each goes to one member)."""
    result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m.member_id: {} for m in members}
    for topic_id, count in sorted(topics.items(), key=lambda item: str(item[0])):
        subscribed = sorted(m.member_id for m in members if topic_id in m.topic_ids)
        if not subscribed:
            continue
        each, extra = divmod(count, len(subscribed))
        start = 0
        for index, member_id in enumerate(subscribed):
            size = each + (1 if index < extra else 0)
            if size:
                result[member_id][topic_id] = frozenset(range(start, start + size))
            start += size
    return result


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_}
