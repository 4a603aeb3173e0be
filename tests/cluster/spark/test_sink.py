"""The streaming sink's exactly-once bookkeeping against a real broker, as plain Python:
the write task and driver commit Spark would call, called directly with a task identity."""

import random

import pyarrow as pa
import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from kctl.spark.offsets import TopicPartition as TP
from kctl.spark.options import sink_options
from kctl.spark.produce import sink_columns
from kctl.spark.replay import TAG, TaskIdentity
from kctl.spark.sinklog import SinkLog, log_topic
from kctl.spark.writer import KctlBatchWriter, KctlStreamWriter
from tests.kafka_helpers import create_topic
from tests.spark.helpers import TIMEOUT_S, consume_all, values

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]
SCHEMA = StructType(
    [
        StructField("value", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
    ]
)


def stream_writer(bootstrap):
    options = sink_options({"kafka.bootstrap.servers": bootstrap}, exactly_once=True)
    return KctlStreamWriter(options, sink_columns(SCHEMA, None))


def arrow(rows):
    """Rows (value, topic, partition) as one Arrow batch, the way Spark hands them over."""
    value, topic, partition = zip(*rows) if rows else ((), (), ())
    return iter(
        [
            pa.RecordBatch.from_pydict(
                {"value": list(value), "topic": list(topic), "partition": pa.array(partition, pa.int32())}
            )
        ]
    )


def task_rows(n, topic="out"):
    """Rows with repeated values, half of them choosing their partition."""
    return [(f"v{i % 7}", topic, i % 2 if i % 3 else None) for i in range(n)]


def test_a_replayed_task_delivers_only_what_its_earlier_attempt_did_not(cluster):
    create_topic(cluster.bootstrap, "out", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    w, me, other = stream_writer(cluster.bootstrap), TaskIdentity("q", 0, 0), TaskIdentity("q", 0, 1)
    mine, theirs = task_rows(60), task_rows(30)
    w.write_task(me, arrow(mine[:25]))  # delivered 25 rows, then the task died
    replay = random.Random(1).sample(mine, len(mine))  # the replay yields them in another order
    done = [w.write_task(me, arrow(replay)), w.write_task(other, arrow(theirs))]
    assert [m.records for m in done] == [35, 30]
    w.commit(done, 0)
    out = consume_all(cluster.bootstrap, "out")
    assert sorted(values(out)) == sorted(v.encode() for v, _, _ in mine + theirs)
    placed = sorted((m.value(), m.partition()) for m in out if dict(m.headers())[TAG].endswith(b"/p"))
    assert placed == sorted((v.encode(), p) for v, _, p in mine + theirs if p is not None)


def test_a_batch_already_committed_is_not_written_again(cluster):
    create_topic(cluster.bootstrap, "out", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    w, me = stream_writer(cluster.bootstrap), TaskIdentity("q", 0, 0)
    w.commit([w.write_task(me, arrow(task_rows(10)))], 0)
    again = w.write_task(me, arrow(task_rows(10)))  # Spark replays: it died before its own commit
    w.commit([again], 0)
    assert again.records == 0
    assert len(consume_all(cluster.bootstrap, "out")) == 10


def test_the_sink_log_records_intents_and_commits_with_end_offsets(cluster):
    create_topic(cluster.bootstrap, "out", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    w = stream_writer(cluster.bootstrap)
    for batch in (0, 1):
        w.commit([w.write_task(TaskIdentity("q", batch, 0), arrow(task_rows(6)))], batch)
    w.write_task(TaskIdentity("q", 2, 3), arrow([]))
    tail = SinkLog({"bootstrap.servers": cluster.bootstrap}, "q").tail()
    assert tail.committed == 1 and tail.intents == [(2, 3)]
    assert tail.commit.ends[TP("out", 0)] + tail.commit.ends[TP("out", 1)] == 12
    assert log_topic("q").startswith("__")  # hidden from subscribePattern and kctl sql


def test_commit_without_tasks_records_nothing(cluster):
    w = stream_writer(cluster.bootstrap)
    w.commit([], 0)
    w.commit([None], 0)
    assert SinkLog({"bootstrap.servers": cluster.bootstrap}, "q").tail().commit is None


def test_batch_writer_produces_without_tags(cluster):
    create_topic(cluster.bootstrap, "out", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    options = sink_options({"kafka.bootstrap.servers": cluster.bootstrap, "topic": "out"}, exactly_once=False)
    message = KctlBatchWriter(options, sink_columns(SCHEMA, "out")).write(arrow(task_rows(5, "ignored")))
    assert (message.topics, message.records) == (["out"], 5)
    assert [m.headers() for m in consume_all(cluster.bootstrap, "out")] == [None] * 5
