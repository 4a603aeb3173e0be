"""A streaming source that has a new micro-batch every `interval` seconds: the clock of the
connectors whose work is periodic (checkpoints, group offsets, heartbeats), so that they run
as Spark queries beside the others, started, stopped and watched by the same runtime."""

from __future__ import annotations

import time
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit


def ticks(spark: SparkSession, interval_s: int) -> DataFrame:
    spark.dataSource.register(TickSource)
    return spark.readStream.format("mirror-ticks").option("interval", str(interval_s)).load()


class TickSource(DataSource):
    """`format("mirror-ticks")`, option `interval` (seconds): one row, the tick, a batch."""

    @classmethod
    def name(cls) -> str:
        return "mirror-ticks"

    def schema(self) -> str:
        return "tick long"

    def streamReader(self, schema: object) -> DataSourceStreamReader:
        return TickReader(int(self.options.get("interval", "1")))


class TickReader(DataSourceStreamReader):
    def __init__(self, interval_s: int) -> None:
        self.interval_s = max(1, interval_s)

    def initialOffset(self) -> dict[str, int]:
        return {"tick": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        return {"tick": int(time.time()) // self.interval_s}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition(end["tick"])]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        yield (int(partition.value),)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to release: a tick is only a time."""
