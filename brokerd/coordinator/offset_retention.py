"""Which committed offsets have expired (offsets.retention.minutes), by Kafka's rules (KIP-211).

An offset is kept while its group may still need it: in an empty group it expires once the
group has been empty for the retention period; in a stable consumer group only offsets of
topics no member subscribes to expire, counted from their commit; offsets committed without a
group (consumers that assign partitions themselves) expire counted from their commit. Groups
in the middle of a rebalance keep everything, and so does an open transaction's commit.
"""

from __future__ import annotations

from brokerd.coordinator.classic_group import ClassicGroup, GroupState
from brokerd.coordinator.group_types import CONSUMER_PROTOCOL_TYPE
from brokerd.coordinator.offsets_topic import CommittedOffset

TopicPartition = tuple[str, int]


def expired_offsets(
    group: ClassicGroup | None,
    offsets: dict[TopicPartition, CommittedOffset],
    pending: set[TopicPartition],
    now_ms: int,
    retention_ms: int,
) -> list[TopicPartition]:
    """The partitions whose offsets ``group`` (None: offsets without a group) no longer keeps."""
    if group is None or group.protocol_type is None:
        since = {tp: c.commit_timestamp for tp, c in offsets.items()}
    elif group.state == GroupState.EMPTY:
        since = {tp: group.state_timestamp_ms for tp in offsets}
    elif group.state == GroupState.STABLE and group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        since = {tp: c.commit_timestamp for tp, c in offsets.items() if not group.is_subscribed_to(tp[0])}
    else:
        return []
    return sorted(tp for tp, base in since.items() if tp not in pending and now_ms - base >= retention_ms)
