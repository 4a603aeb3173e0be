"""The source: batch reads and micro-batch streaming reads of Kafka partitions.

Planning (which offsets) runs on the driver and asks the cluster through one AdminClient;
reading (`read`) runs in executor tasks, each on its own offset range, and yields Arrow
record batches. Spark pickles the reader to ship it to executors, so the driver-side client
is created lazily and left out of the pickle.

With key.format or value.format, `decoding` holds the reader schemas the driver chose and
each task decodes its batches (kctl.spark.decoding).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kctl.spark import planning
from kctl.spark.arrow import record_batch
from kctl.spark.decoding import BatchDecoder, SourceDecoding
from kctl.spark.fetch import read_range
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import Offsets, TopicPartition, from_json, to_json
from kctl.spark.options import SourceOptions


class _Planner:
    """Shared by both readers: the lazy cluster client, task planning and reading."""

    def __init__(self, options: SourceOptions, decoding: SourceDecoding | None = None):
        self.options = options
        self.decoding = decoding
        self._cluster: ClusterOffsets | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_cluster": None}

    @property
    def cluster(self) -> ClusterOffsets:
        if self._cluster is None:
            self._cluster = ClusterOffsets(self.options.client, self.options.read_committed)
        return self._cluster

    def starting(self, tps: list[TopicPartition]) -> Offsets:
        return planning.resolve(
            self.options.starting, tps, self.cluster, self.options.no_match_latest, "startingOffsets"
        )

    def tasks(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        found = planning.split(planning.ranges(start, end), self.options.min_partitions)
        return [InputPartition(r) for r in found]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        r = partition.value
        if not isinstance(r, planning.OffsetRange):
            return  # Spark's placeholder when there is nothing to read
        o = self.options
        decoder = None if self.decoding is None else BatchDecoder(self.decoding, o.include_headers)
        for messages in read_range(o.client, r, o.fail_on_data_loss, o.poll_timeout_s):
            batch = record_batch(messages, r.topic, r.partition, o.include_headers)
            yield batch if decoder is None else decoder.apply(batch)


class KctlBatchReader(_Planner, DataSourceReader):
    """Reads [startingOffsets, endingOffsets), both resolved when the query is planned."""

    def partitions(self) -> list[InputPartition]:
        tps = self.cluster.partitions(self.options.subscription)
        start = self.starting(tps)
        end = planning.resolve(self.options.ending, tps, self.cluster, True, "endingOffsets")
        return self.tasks(start, end)


class KctlStreamReader(_Planner, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches up to the high watermark (or last stable offset), bounded by
    maxOffsetsPerTrigger, frozen at the query's start under Trigger.AvailableNow."""

    def __init__(self, options: SourceOptions, decoding: SourceDecoding | None = None):
        super().__init__(options, decoding)
        self._cap: Offsets | None = None
        self._latest: Offsets | None = None

    def initialOffset(self) -> dict:
        return to_json(self.starting(self.cluster.partitions(self.options.subscription)))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._cap = self._current()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json(start)
        latest = self._current()
        new = [tp for tp in latest if tp not in begin]
        end = planning.advance(
            begin, latest, self.cluster.earliest(new), self._cap, self.options.fail_on_data_loss
        )
        if isinstance(limit, ReadMaxRows):
            end = planning.limit(begin, end, limit.max_rows)
        return to_json(end)

    def reportLatestOffset(self) -> dict | None:
        return None if self._latest is None else to_json(self._latest)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return self.tasks(from_json(start), from_json(end))

    def _current(self) -> Offsets:
        tps = self.cluster.partitions(self.options.subscription)
        self._latest = self.cluster.latest(tps)
        return self._latest
