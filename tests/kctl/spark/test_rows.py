"""Records to Arrow batches (source) and Arrow batches to records (sink), without Spark."""

import datetime

import pyarrow as pa
import pytest
from confluent_kafka import Message
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from kctl.spark.arrow import record_batch
from kctl.spark.produce import rows, sink_columns
from kctl.spark.replay import TaskIdentity, digest
from kctl.spark.schema import HEADERS_TYPE, arrow_schema, source_schema

pytestmark = pytest.mark.unit


def message(offset, key, value, headers=None, timestamp=(1, 1_700_000_000_123)):
    return Message(
        topic="t", partition=3, offset=offset, key=key, value=value, headers=headers, timestamp=timestamp
    )


def test_record_batch_has_spark_kafka_columns_and_types():
    batch = record_batch(
        [message(7, b"k", b"v", [("h", b"1"), ("n", None)]), message(8, None, None, None, timestamp=(2, 5))],
        "t",
        3,
        include_headers=True,
    )
    assert batch.schema.equals(arrow_schema(source_schema(True)))
    rows_ = batch.to_pylist()
    assert rows_[0]["key"] == b"k" and rows_[0]["value"] == b"v"
    assert (rows_[0]["topic"], rows_[0]["partition"], rows_[0]["offset"]) == ("t", 3, 7)
    utc = datetime.UTC
    assert rows_[0]["timestamp"] == datetime.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=utc)
    assert rows_[0]["timestampType"] == 0 and rows_[1]["timestampType"] == 1  # CreateTime, LogAppendTime
    assert rows_[0]["headers"] == [{"key": "h", "value": b"1"}, {"key": "n", "value": None}]
    assert rows_[1]["key"] is None and rows_[1]["value"] is None and rows_[1]["headers"] is None


def test_record_batch_without_headers_and_empty():
    assert record_batch([message(0, b"k", b"v")], "t", 3, False).schema.names[-1] == "timestampType"
    assert record_batch([], "t", 3, False).num_rows == 0


def schema(*fields):
    return StructType([StructField(name, kind) for name, kind in fields])


def test_sink_columns_follow_the_contract():
    cols = sink_columns(schema(("value", StringType()), ("topic", StringType()), ("extra", LongType())), None)
    assert (cols.topic, cols.key, cols.partition, cols.headers) == (None, False, False, False)
    with pytest.raises(ValueError, match="needs a value column"):
        sink_columns(schema(("key", StringType())), "t")
    with pytest.raises(ValueError, match="needs a topic"):
        sink_columns(schema(("value", StringType())), None)
    with pytest.raises(ValueError, match="column partition has type bigint"):
        sink_columns(schema(("value", StringType()), ("partition", LongType())), "t")
    with pytest.raises(ValueError, match="column key has type int"):
        sink_columns(schema(("value", StringType()), ("key", IntegerType())), "t")


def test_rows_take_the_topic_option_over_the_column_and_convert_headers():
    batch = pa.RecordBatch.from_pydict(
        {
            "value": ["a", None],
            "key": [b"k", None],
            "topic": ["ignored", "ignored"],
            "partition": pa.array([1, None], pa.int32()),
            "headers": pa.array(
                [[("h", b"x")], None], pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
            ),
        }
    )
    columns = sink_columns(
        schema(
            ("value", StringType()),
            ("key", StringType()),
            ("topic", StringType()),
            ("partition", IntegerType()),
            ("headers", HEADERS_TYPE),
        ),
        "out",
    )
    assert list(rows(batch, columns)) == [("out", 1, b"k", "a", [("h", b"x")]), ("out", None, None, None, [])]


def test_null_topic_is_refused():
    batch = pa.RecordBatch.from_pydict({"value": ["a"], "topic": pa.array([None], pa.string())})
    with pytest.raises(ValueError, match="null topic"):
        list(rows(batch, sink_columns(schema(("value", StringType()), ("topic", StringType())), None)))


def test_digest_tells_none_from_empty_and_text_equals_its_bytes():
    assert digest(None, b"v", []) != digest(b"", b"v", [])
    assert digest(b"k", "v", [("h", None)]) == digest(b"k", b"v", [("h", None)])
    assert digest(b"k", b"v", [("h", b"")]) != digest(b"k", b"v", [("h", None)])
    assert digest(b"ab", b"c", []) != digest(b"a", b"bc", [])


def test_tags_name_query_batch_task_and_partition_choice():
    me = TaskIdentity("q1", 4, 2)
    assert me.tag(False) == b"q1/4/2" and me.tag(True) == b"q1/4/2/p"
