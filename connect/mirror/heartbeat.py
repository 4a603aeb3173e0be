"""MirrorHeartbeatConnector as a Spark query on a clock: a Heartbeat record to `heartbeats` on
the target every emit.heartbeats.interval.seconds, which MirrorSource connectors replicate
onward (`<alias>.heartbeats`), so a cluster sees that a replication flow is alive."""

from __future__ import annotations

import time

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from connect.mirror import policy
from connect.mirror.clusters import Cluster
from connect.mirror.records import Heartbeat
from connect.mirror.settings import HEARTBEAT_KEYS, MirrorSettings
from connect.mirror.ticks import ticks
from connect.queryspec import QuerySpec
from kctl.spark.produce import Outbox


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    settings = MirrorSettings.of(spec.config, spec.kafka, HEARTBEAT_KEYS)
    interval = settings.seconds("emit.heartbeats.interval.seconds")
    return ticks(spark, interval).writeStream.foreachBatch(HeartbeatEmitter(settings))


class HeartbeatEmitter:
    def __init__(self, settings: MirrorSettings) -> None:
        self.settings = settings
        self.target = Cluster(settings.target)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if not self.settings.flag("emit.heartbeats.enabled"):
            return
        replication = int(self.settings.text("heartbeats.topic.replication.factor"))
        self.target.internal_topic(policy.HEARTBEATS, replication)
        beat = Heartbeat(self.settings.source_alias, self.settings.target_alias, int(time.time() * 1000))
        with Outbox(self.target.client, idempotent=False) as outbox:
            outbox.send(policy.HEARTBEATS, 0, beat.key(), beat.value(), [])
