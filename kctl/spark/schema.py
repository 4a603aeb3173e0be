"""The row schema of the source, which is Spark's Kafka source schema, in Spark and Arrow form.

With key.format or value.format (kctl.spark.decoding) the decoded side's column has the type
of its registry schema, and three columns follow the others for it: SIDE_schema_id (the id
in the record's framing), SIDE_error (why it did not decode) and SIDE_raw (its bytes, when
it did not decode).

Spark checks every Arrow batch a reader yields against the Arrow form of the declared schema
(field names, types, time zone), so both forms come from the same StructType.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
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


def decoded_source_schema(include_headers: bool, decoded: Mapping[str, DataType]) -> StructType:
    """The source schema with the sides in `decoded` ("key", "value") of their given types."""
    base = source_schema(include_headers)
    fields = [StructField(f.name, decoded[f.name]) if f.name in decoded else f for f in base.fields]
    for side in ("key", "value"):
        if side in decoded:
            fields += [
                StructField(f"{side}_schema_id", IntegerType()),
                StructField(f"{side}_error", StringType()),
                StructField(f"{side}_raw", BinaryType()),
            ]
    return StructType(fields)


def arrow_schema(schema: StructType) -> pa.Schema:
    # PySpark converts Python data source batches with timezone="UTC"; so must we.
    return to_arrow_schema(schema, timezone="UTC")
