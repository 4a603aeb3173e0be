"""Topics as SQL views for `kctl sql`: `SELECT ... FROM orders` reads the topic `orders`.

Only topics the query text names become views: defining a view asks a Python worker for
the source's schema, a cost worth paying per topic used, not per topic in the cluster.
Names that are not plain identifiers are quoted with backticks: FROM `page-views`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import TopicPartition, to_json
from kctl.spark.options import Subscription

SAMPLE_PER_PARTITION = 1000  # records read per partition to infer a JSON schema
METADATA = ("topic", "partition", "offset", "timestamp", "timestampType")


@dataclass(frozen=True)
class ViewSpec:
    """How topics become views: where to start, and how to decode values."""

    client: dict[str, str]  # librdkafka settings, bootstrap.servers included
    streaming: bool
    starting: str = "earliest"
    value_format: str = "text"  # or "json"
    schema: str | None = None  # DDL of the JSON values; None: infer from a sample


def named_topics(sql: str, topics: list[str]) -> list[str]:
    """The topics whose names appear in the query as identifiers (quoted or not)."""
    words = set(re.findall(r"[\w.-]+", sql)) | set(re.findall(r"`([^`]+)`", sql))
    words |= {part for w in words for part in w.split(".")}
    lowered = {w.lower() for w in words}
    return sorted(t for t in topics if not t.startswith("__") and t.lower() in lowered)


def register_views(spark: SparkSession, spec: ViewSpec, topics: list[str]) -> None:
    for topic in topics:
        decoded(spark, spec, topic).createOrReplaceTempView(quote(topic))


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def source(spark: SparkSession, spec: ViewSpec, topic: str) -> DataFrame:
    reader = spark.readStream if spec.streaming else spark.read
    return (
        reader.format("kctl")
        .options(**client_options(spec.client))
        .option("subscribe", topic)
        .option("startingOffsets", spec.starting)
        .load()
    )


def client_options(client: dict[str, str]) -> dict[str, str]:
    """librdkafka settings as the format's `kafka.*` options."""
    return {f"kafka.{k}": v for k, v in client.items()}


def decoded(spark: SparkSession, spec: ViewSpec, topic: str) -> DataFrame:
    """key and value as text, or the value's JSON fields as columns, plus the metadata."""
    raw = source(spark, spec, topic).withColumn("key", F.col("key").cast("string"))
    if spec.value_format == "text":
        return raw.select("key", F.col("value").cast("string").alias("value"), *METADATA)
    schema = spec.schema or infer_schema(spark, spec, topic)
    parsed = raw.withColumn("__value", F.from_json(F.col("value").cast("string"), schema))
    fields = set(parsed.select("__value.*").columns)  # a JSON field wins over a metadata column
    return parsed.select(
        *[c for c in ("key",) if c not in fields], "__value.*", *[c for c in METADATA if c not in fields]
    )


def infer_schema(spark: SparkSession, spec: ViewSpec, topic: str) -> StructType:
    """The JSON schema Spark infers from the first records of every partition."""
    cluster = ClusterOffsets(spec.client)
    tps = cluster.partitions(Subscription(topics=(topic,)))
    low, high = cluster.earliest(tps), cluster.latest(tps)
    ends: dict[TopicPartition, int] = {tp: min(high[tp], low[tp] + SAMPLE_PER_PARTITION) for tp in tps}
    if all(ends[tp] == low[tp] for tp in tps):
        raise ValueError(f"topic {topic!r} has no records to infer a JSON schema from; pass --schema")
    sample = (
        spark.read.format("kctl")
        .options(**client_options(spec.client))
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps(to_json(low)))
        .option("endingOffsets", json.dumps(to_json(ends)))
        .load()
        .select(F.col("value").cast("string"))
    )
    return spark.read.json(sample.rdd.map(lambda row: row[0])).schema
