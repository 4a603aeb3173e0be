"""Fetched records to Arrow record batches, one column at a time.

confluent-kafka hands out one Message object per record; each field is pulled out with a
single list comprehension and converted to an Arrow array in one call, and the per-record
arithmetic (timestamp units, timestamp type ids) is done by Arrow compute over whole columns.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from kctl.kafka.record import Record
from kctl.spark.schema import arrow_schema, source_schema

_SCHEMAS = {flag: arrow_schema(source_schema(flag)) for flag in (False, True)}


def record_batch(messages: list[Record], topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """The Spark Kafka source rows of records of one partition, as one RecordBatch."""
    schema = _SCHEMAS[include_headers]
    count = len(messages)
    kinds, millis = zip(*[m.timestamp() for m in messages]) if messages else ((), ())
    columns = [
        pa.array([m.key() for m in messages], pa.binary()),
        pa.array([m.value() for m in messages], pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        pa.array([m.offset() for m in messages], pa.int64()),
        pc.multiply(pa.array(millis, pa.int64()), 1000).cast(schema.field("timestamp").type),
        # librdkafka numbers timestamp types 0 none, 1 CreateTime, 2 LogAppendTime;
        # Kafka (and Spark's timestampType column) numbers them -1, 0, 1.
        pc.subtract(pa.array(kinds, pa.int32()), 1),
    ]
    if include_headers:
        columns.append(pa.array([m.headers() or None for m in messages], schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
