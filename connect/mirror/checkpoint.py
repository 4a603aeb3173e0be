"""MirrorCheckpointConnector as a Spark query on a clock (connect.mirror.ticks): every round
reads the offset syncs written since the last one, translates the committed offsets of the
source's replicated groups (MM2's rule, connect.mirror.translation), emits the checkpoints
that changed to `<source alias>.checkpoints.internal` on the target, and with
sync.group.offsets.enabled commits them to the same groups on the target: only to a group
with no active member there, and never moving an offset back, as MM2.

At least once, as MM2's: a round replayed after a crash emits its checkpoints again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from connect.mirror import policy
from connect.mirror.clusters import Cluster
from connect.mirror.records import Checkpoint, OffsetSync
from connect.mirror.settings import CHECKPOINT_KEYS, MirrorSettings
from connect.mirror.ticks import ticks
from connect.mirror.translation import OffsetSyncStore
from connect.queryspec import QuerySpec
from kctl.spark.fetch import read_range
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import TopicPartition
from kctl.spark.planning import OffsetRange
from kctl.spark.produce import Outbox

READ_TIMEOUT_S = 30.0
EMIT, SYNC = "emit.checkpoints", "sync.group.offsets"


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    settings = MirrorSettings.of(spec.config, spec.kafka, CHECKPOINT_KEYS)
    tick = min(settings.seconds(f"{task}.interval.seconds") for task in (EMIT, SYNC))
    return ticks(spark, tick).writeStream.foreachBatch(CheckpointRounds(settings))


class CheckpointRounds:
    """`foreachBatch(CheckpointRounds(...))`: all of it on the driver, which keeps the syncs
    read so far (a restarted query reads the syncs topic from its start again)."""

    def __init__(self, settings: MirrorSettings) -> None:
        self.settings = settings
        self.source, self.target = Cluster(settings.source), Cluster(settings.target)
        self.store = OffsetSyncStore()
        self._read_to = -1  # the syncs topic's offset read up to; -1: its start
        self._emitted: dict[tuple[str, str, int], Checkpoint] = {}
        self._last = {EMIT: 0.0, SYNC: 0.0}

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        due = [task for task in (EMIT, SYNC) if self._due(task)]
        if not due:
            return
        self._read_syncs()
        checkpoints = list(self._checkpoints())
        if EMIT in due:
            self._emit(checkpoints)
        if SYNC in due:
            self._sync_groups(checkpoints)

    def _due(self, task: str) -> bool:
        if not self.settings.flag(f"{task}.enabled"):
            return False
        now = time.monotonic()
        if now - self._last[task] < self.settings.seconds(f"{task}.interval.seconds") - 0.5:
            return False
        self._last[task] = now
        return True

    def _read_syncs(self) -> None:
        topic = self.settings.offset_syncs_topic
        client = self.settings.offset_syncs_cluster
        if topic not in Cluster(client).topics():
            return
        tp = TopicPartition(topic, 0)
        bounds = ClusterOffsets(client)
        start = max(self._read_to, bounds.earliest([tp])[tp])
        end = bounds.latest([tp])[tp]
        if start >= end:
            return
        span = OffsetRange(topic, 0, start, end)
        for chunk in read_range(client, span, fail_on_data_loss=False, timeout_s=READ_TIMEOUT_S):
            for record in chunk:
                key, value = record.key(), record.value()
                if key is not None and value is not None:
                    self.store.add(OffsetSync.decode(key, value))
            # a read that timed out ends early: the next round goes on from here, not from `end`
            self._read_to = chunk[-1].offset() + 1

    def _checkpoints(self) -> Iterator[Checkpoint]:
        """MirrorCheckpointTask.checkpointsForGroup: each replicated partition a replicated
        group committed, whose offset translates."""
        settings = self.settings
        groups = settings.group_filter()
        for group in self.source.groups():
            if not groups.passes(group):
                continue
            for (topic, partition), (offset, metadata) in sorted(self.source.committed(group).items()):
                downstream = (
                    self.store.translate(topic, partition, offset) if settings.replicates(topic) else None
                )
                if downstream is not None:
                    remote = settings.policy.format_remote_topic(settings.source_alias, topic)
                    yield Checkpoint(group, remote, partition, offset, downstream, metadata)

    def _emit(self, checkpoints: list[Checkpoint]) -> None:
        changed = [c for c in checkpoints if self._emitted.get((c.group, c.topic, c.partition)) != c]
        if not changed:
            return
        topic = policy.checkpoints_topic(self.settings.source_alias)
        self.target.internal_topic(topic, int(self.settings.text("checkpoints.topic.replication.factor")))
        with Outbox(self.target.client, idempotent=False) as outbox:
            for checkpoint in changed:
                outbox.send(topic, 0, checkpoint.key(), checkpoint.value(), [])
        self._emitted.update({(c.group, c.topic, c.partition): c for c in changed})

    def _sync_groups(self, checkpoints: list[Checkpoint]) -> None:
        remote_topics = self.target.topics()
        for group in sorted({c.group for c in checkpoints}):
            if not self.target.idle(group):
                continue
            existing = self.target.committed(group)
            plan = {
                (c.topic, c.partition): c.downstream
                for c in checkpoints
                if c.group == group
                and c.partition < remote_topics.get(c.topic, 0)
                and c.downstream > existing.get((c.topic, c.partition), (-1, ""))[0]
            }
            if plan:
                self.target.commit(group, plan)
