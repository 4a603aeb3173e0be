"""Spark's Kafka connector contract for PySpark, in pure Python: the `kctl` data source.

    import kctl.spark
    kctl.spark.register(spark)
    df = (spark.readStream.format("kctl")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders").load())

Needs the `spark` extra (pyspark, pyarrow, pandas). See docs/spark.md.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from kctl.spark.datasource import KctlDataSource

__all__ = ["KctlDataSource", "register"]


def register(spark: SparkSession) -> None:
    """Make `format("kctl")` available in this session (registrations are per session)."""
    spark.dataSource.register(KctlDataSource)
