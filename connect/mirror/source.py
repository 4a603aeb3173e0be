"""MirrorSourceConnector as a Spark query: kctl's source reads the replicated topics of the
source cluster; each micro-batch first makes the remote topics on the target (partitions, and
configs with sync.topic.configs.enabled), then every Spark task copies one source partition's
records, in offset order, to the same partition of its remote topic, with key, value, headers
and timestamp, and writes the batch's offset syncs.

Exactly once, by position: before a batch writes anything, the end offset of every remote
partition is noted in the query's checkpoint (its floor). A record's target offset is its
floor plus its index in the batch's records of its partition, so an attempt that finds
`end - floor` records of its partition already there (an earlier attempt, before a crash)
skips exactly those. This holds while nothing else writes the remote topics, as MM2 assumes;
and unlike kctl's streaming sink it adds no header to the records and knows each record's
target offset, which the offset syncs need.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from connect.lag import subscription_lag
from connect.mirror import ledger
from connect.mirror.clusters import Cluster
from connect.mirror.records import OffsetSync
from connect.mirror.settings import SOURCE_KEYS, MirrorSettings
from connect.mirror.translation import sync_points
from connect.queryspec import QuerySpec
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import TopicPartition
from kctl.spark.options import Subscription
from kctl.spark.produce import Outbox

MAX_RECORDS_PER_BATCH = "50000"
LEDGER = "mirror-floors.json"
Floors = dict[str, dict[str, int]]  # remote topic -> partition -> end offset before the batch


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    settings = MirrorSettings.of(spec.config, spec.kafka, SOURCE_KEYS)
    records = (
        spark.readStream.format("kctl")
        .options(**{f"kafka.{k}": v for k, v in settings.source.items()})
        .option("subscribePattern", settings.replicated_topics())
        .option("includeHeaders", "true")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", MAX_RECORDS_PER_BATCH)
        .option("groupIdPrefix", f"connect-{spec.name}")
        .load()
    )
    columns = (
        "topic",
        "partition",
        "offset",
        "key",
        "value",
        "headers",
        "unix_millis(timestamp) AS timestamp",
    )
    return records.selectExpr(*columns).writeStream.foreachBatch(MirrorBatches(settings, spec.checkpoint))


def lag(spec: QuerySpec) -> int:
    """Records of the replicated topics on the source cluster not yet copied."""
    settings = MirrorSettings.of(spec.config, spec.kafka, SOURCE_KEYS)
    return subscription_lag(settings.source, Subscription(pattern=settings.replicated_topics()), spec)


class MirrorBatches:
    """`foreachBatch(MirrorBatches(...))`: runs on the driver; the copying runs in the tasks."""

    def __init__(self, settings: MirrorSettings, checkpoint: Path) -> None:
        self.settings = settings
        self.ledger = checkpoint / LEDGER
        self._configs_synced: float | None = None  # when topic configs were last copied

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        remote = self._sync_topics()
        floors: Floors = ledger.noted(self.ledger, batch_id, lambda: _ends(self.settings.target, remote))
        batch.foreachPartition(PartitionCopier(self.settings, floors))

    def _sync_topics(self) -> dict[str, int]:
        """Create the remote topics that are missing and grow those with fewer partitions than
        their source; copy topic configs at the first batch, then when due. The remote topics
        and their partition counts."""
        settings, source, target = self.settings, Cluster(self.settings.source), Cluster(self.settings.target)
        wanted = {topic: n for topic, n in source.topics().items() if settings.replicates(topic)}
        existing = target.topics()
        configs_due = settings.flag("sync.topic.configs.enabled") and (
            self._configs_synced is None
            or time.monotonic() - self._configs_synced
            >= settings.seconds("sync.topic.configs.interval.seconds")
        )
        remote = {}
        for topic, partitions in wanted.items():
            name = settings.policy.format_remote_topic(settings.source_alias, topic)
            remote[name] = partitions
            configs = source.synced_configs(topic) if configs_due or name not in existing else {}
            if name not in existing:
                replication = target.replication(int(settings.text("replication.factor")))
                target.create(
                    name,
                    partitions,
                    replication,
                    configs if settings.flag("sync.topic.configs.enabled") else {},
                )
                continue
            if existing[name] < partitions:
                target.grow(name, partitions)
            if configs_due:
                target.set_configs(name, configs)
        if configs_due:
            self._configs_synced = time.monotonic()
        syncs = Cluster(settings.offset_syncs_cluster)
        syncs.internal_topic(
            settings.offset_syncs_topic, int(settings.text("offset-syncs.topic.replication.factor"))
        )
        return remote


def _ends(client: dict[str, str], topics: dict[str, int]) -> Floors:
    tps = [TopicPartition(topic, p) for topic, n in topics.items() for p in range(n)]
    ends = ClusterOffsets(client).latest(tps)
    floors: Floors = {}
    for tp, end in ends.items():
        floors.setdefault(tp.topic, {})[str(tp.partition)] = end
    return floors


@dataclass(frozen=True)
class PartitionCopier:
    """Runs in a Spark task: the task's records (one source partition's range, as kctl's
    source plans it) copied to their remote partitions, then their offset syncs."""

    settings: MirrorSettings
    floors: Floors

    def __call__(self, rows: Iterable[Row]) -> None:
        ordered = sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))
        for (topic, partition), records in groupby(ordered, key=lambda r: (r["topic"], r["partition"])):
            self._copy(topic, partition, list(records))

    def _copy(self, topic: str, partition: int, records: list[Row]) -> None:
        settings = self.settings
        remote = settings.policy.format_remote_topic(settings.source_alias, topic)
        floor = self.floors.get(remote, {}).get(str(partition))
        if floor is None:
            raise RuntimeError(f"{remote}/{partition} did not exist when the micro-batch began")
        tp = TopicPartition(remote, partition)
        written = ClusterOffsets(settings.target).latest([tp])[tp] - floor
        if not 0 <= written <= len(records):
            raise RuntimeError(
                f"{remote}/{partition} has {written} records more than before this micro-batch of "
                f"{len(records)}: something else writes to it"
            )
        with Outbox(settings.target) as outbox:
            for record in records[written:]:
                headers = [(h["key"], _bytes(h["value"])) for h in record["headers"] or []]
                key, value = _bytes(record["key"]), _bytes(record["value"])
                outbox.send(
                    remote, partition, key, value, headers, timestamp=max(record["timestamp"] or 0, 0)
                )
        offsets = [record["offset"] for record in records]
        with Outbox(settings.offset_syncs_cluster, idempotent=False) as outbox:
            for i in sync_points(offsets):
                sync = OffsetSync(topic, partition, offsets[i], floor + i)
                outbox.send(settings.offset_syncs_topic, 0, sync.key(), sync.value(), [])


def _bytes(data: bytes | bytearray | None) -> bytes | None:
    return None if data is None else bytes(data)
