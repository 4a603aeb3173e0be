"""The row schema of the source, which is Spark's Kafka source schema, in Spark and Arrow form.

Spark checks every Arrow batch a reader yields against the Arrow form of the declared schema
(field names, types, time zone), so both forms come from the same StructType.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))

BASE_FIELDS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]


def source_schema(include_headers: bool) -> StructType:
    extra = [StructField("headers", HEADERS_TYPE)] if include_headers else []
    return StructType(BASE_FIELDS + extra)


def arrow_schema(schema: StructType) -> pa.Schema:
    # PySpark converts Python data source batches with timezone="UTC"; so must we.
    return to_arrow_schema(schema, timezone="UTC")
