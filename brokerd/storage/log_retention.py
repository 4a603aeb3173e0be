"""Which old segments ``retention.ms`` and ``retention.bytes`` let go.

Retention works on whole segments, oldest first, and never on data the high
watermark has not passed: followers may still need to copy it.
"""

from __future__ import annotations

from collections.abc import Sequence

from brokerd.storage.log_config import LogConfig
from brokerd.storage.log_segment import LogSegment


def deletable_segment_count(
    segments: Sequence[LogSegment], config: LogConfig, now_ms: int, high_watermark: int
) -> int:
    """How many of the oldest segments are past retention (Kafka's ``deletableSegments``).

    A segment goes when its newest timestamp is older than ``retention.ms``
    or when the partition stays above ``retention.bytes`` without it. An
    empty last segment is never counted; a non-empty last one may be, and the
    caller rolls before deleting it.
    """
    if "delete" not in config.cleanup_policy:
        return 0
    excess_bytes = sum(segment.size for segment in segments) - config.retention_bytes
    count = 0
    for segment in segments:
        if segment.size == 0 or segment.next_offset > high_watermark:
            break
        expired = config.retention_ms >= 0 and now_ms - segment.largest_timestamp > config.retention_ms
        oversized = config.retention_bytes >= 0 and excess_bytes >= segment.size
        if not (expired or oversized):
            break
        excess_bytes -= segment.size
        count += 1
    return count
