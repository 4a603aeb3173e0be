"""A table-reading source connector's Spark query: its own streaming DataSource, given the
connector's config and converters as one JSON option (`settings`: Spark hands a data source
only strings), its rows (topic, key, value) written into the worker's cluster by kctl's sink."""

from __future__ import annotations

import json
from collections.abc import Mapping

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.streaming import DataStreamWriter

from connect.converters import Converter
from connect.queryspec import QuerySpec

SCHEMA = "topic string, key binary, value binary"  # a null value: a tombstone


def stream(spark: SparkSession, spec: QuerySpec, source: type[DataSource]) -> DataStreamWriter:
    """The query from `source` into the topics, up to its start."""
    spark.dataSource.register(source)
    settings = {
        "config": dict(spec.config),
        "key": [spec.converter("key").class_name, spec.converter("key").schemas_enable],
        "value": [spec.converter("value").class_name, spec.converter("value").schemas_enable],
    }
    return (
        spark.readStream.format(source.name())
        .option("settings", json.dumps(settings))
        .load()
        .writeStream.format("kctl")
        .options(**spec.kafka)
    )


def settings(options: Mapping[str, str]) -> tuple[dict[str, str], Converter, Converter]:
    """The connector's config and its key and value converters, from the source's options."""
    found = json.loads(options["settings"])
    return found["config"], Converter(*found["key"]), Converter(*found["value"])
