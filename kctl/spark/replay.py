"""Recognising the records an earlier attempt of a write task already delivered.

Every record the streaming sink produces carries a header `kctl.spark.write` naming the
query, micro-batch and Spark task that wrote it: `<query id>/<batch id>/<task>`, plus `/p`
when the row chose its partition. When a task runs again (the query restarted, or Spark
retried it), it reads the target topics from the offsets of the last committed batch to their
end, counts the records carrying its own tag by content, and skips that many equal rows
while producing. Rows are matched by content, not position, so this holds even when a
replayed batch yields its rows in another order (shuffles do not keep order), as long as it
yields the same rows.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from pyspark import TaskContext

from kctl.spark.fetch import read_range
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import Offsets
from kctl.spark.options import Subscription
from kctl.spark.planning import OffsetRange
from kctl.spark.produce import Headers, Row

TAG = "kctl.spark.write"
SCAN_TIMEOUT_S = 60.0
# Spark-internal task properties (StreamExecution): there is no public API for them.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


@dataclass(frozen=True)
class TaskIdentity:
    query: str
    batch: int
    task: int

    def tag(self, chose_partition: bool) -> bytes:
        return f"{self.query}/{self.batch}/{self.task}{'/p' if chose_partition else ''}".encode()


def current_task() -> TaskIdentity:
    """Which query, micro-batch and task the running Spark task writes for."""
    ctx = TaskContext.get()
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx else None
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx else None
    if ctx is None or not query or batch is None:
        raise RuntimeError(
            "the kctl streaming sink cannot tell which query and micro-batch this "
            f"task belongs to (task properties {QUERY_ID_PROPERTY}, "
            f"{BATCH_ID_PROPERTY} missing)"
        )
    return TaskIdentity(query, int(batch), ctx.partitionId())


def digest(key, value, headers: Headers) -> bytes:
    """A fingerprint of a record's content; None and empty stay distinct."""
    h = hashlib.blake2b(digest_size=16)
    for part in [key, value, *(x for pair in headers for x in pair)]:
        data = part.encode() if isinstance(part, str) else part
        h.update(b"\xff" if data is None else len(data).to_bytes(4, "big") + data)
    return h.digest()


class Leftovers:
    """The records an earlier attempt of one task delivered, as a multiset, topic by topic."""

    def __init__(self, client: dict[str, str], identity: TaskIdentity, floor: Offsets):
        self._client = client
        self._cluster = ClusterOffsets(client)
        self._floor = floor
        self._tags = {identity.tag(False): False, identity.tag(True): True}
        self._counts: Counter = Counter()
        self._scanned: set[str] = set()

    def take(self, row: Row) -> bool:
        """True (and one fewer left) when an earlier attempt already delivered this row."""
        topic, partition, key, value, headers = row
        if topic not in self._scanned:
            self._scan(topic)
        found = (topic, partition, digest(key, value, headers))
        if self._counts[found] > 0:
            self._counts[found] -= 1
            return True
        return False

    def _scan(self, topic: str) -> None:
        """Count this task's tagged records from the last commit's end offsets (or the log
        start, for partitions no commit knows) to the end of every partition of the topic."""
        self._scanned.add(topic)
        tps = self._cluster.partitions(Subscription(topics=(topic,)))
        low, high = self._cluster.earliest(tps), self._cluster.latest(tps)
        for tp in tps:
            span = OffsetRange(topic, tp.partition, max(low[tp], self._floor.get(tp, 0)), high[tp])
            for chunk in read_range(self._client, span, fail_on_data_loss=False, timeout_s=SCAN_TIMEOUT_S):
                for msg in chunk:
                    self._count(msg)

    def _count(self, msg) -> None:
        headers = msg.headers() or []
        tag = next((v for k, v in headers if k == TAG), None)
        if tag not in self._tags:
            return
        partition = msg.partition() if self._tags[tag] else None
        own = [(k, v) for k, v in headers if k != TAG]
        self._counts[(msg.topic(), partition, digest(msg.key(), msg.value(), own))] += 1
