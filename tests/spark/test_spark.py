"""End to end through a real local SparkSession: the format as Spark users call it."""

import json
import uuid

import pytest
from confluent_kafka import Producer
from pyspark.sql import functions as F

from kctl.spark.sqlrun import as_records
from kctl.spark.views import METADATA, ViewSpec, register_views
from tests.kafka_helpers import create_topic
from tests.kctl.mock_cluster import mock_cluster
from tests.spark.helpers import TIMEOUT_S, consume_all, produce

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]


def kctl_read(spark, bootstrap, **options):
    return spark.read.format("kctl").option("kafka.bootstrap.servers", bootstrap).options(**options).load()


def test_batch_read_returns_exactly_the_records_of_a_topic(spark, cluster):
    create_topic(cluster.bootstrap, "orders", 3, wait_for_leaders=True, timeout=TIMEOUT_S)
    records = [(f"k{i % 5}".encode(), f"v{i}".encode(), [("n", str(i).encode())]) for i in range(300)]
    produce(cluster.bootstrap, "orders", records)
    df = kctl_read(spark, cluster.bootstrap, subscribe="orders", includeHeaders="true", minPartitions="6")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    assert df.rdd.getNumPartitions() >= 6
    rows = df.collect()
    assert sorted((r.key, r.value, [(h.key, h.value) for h in r.headers]) for r in rows) == sorted(
        (k, v, h) for k, v, h in records
    )
    expected = {(m.partition(), m.offset()) for m in consume_all(cluster.bootstrap, "orders")}
    assert {(r.partition, r.offset) for r in rows} == expected and len(rows) == 300
    assert {r.topic for r in rows} == {"orders"} and {r.timestampType for r in rows} == {0}


def test_streaming_read_runs_bounded_micro_batches_and_checkpoints_kafka_json(spark, cluster, tmp_path):
    create_topic(cluster.bootstrap, "events", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "events", [f"e{i}" for i in range(25)], partition=0)
    produce(cluster.bootstrap, "events", [f"f{i}" for i in range(5)], partition=1)
    seen = []
    query = (
        spark.readStream.format("kctl")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", "events")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "8")
        .load()
        .writeStream.foreachBatch(lambda df, batch: seen.append((batch, df.count())))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert [n for _, n in seen] == [8, 8, 8, 6]
    last = (tmp_path / "ck" / "offsets" / str(seen[-1][0])).read_text().splitlines()[-1]
    assert json.loads(last) == {"events": {"0": 25, "1": 5}}


def test_batch_write_takes_the_sink_columns(spark, cluster):
    create_topic(cluster.bootstrap, "out", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    rows = spark.createDataFrame([("a", "x", 1), ("b", None, 0)], "value string, key string, partition int")
    (
        rows.withColumn("topic", F.lit("out"))
        .withColumn("headers", F.array(F.struct(F.lit("h").alias("key"), F.lit(b"1").alias("value"))))
        .write.format("kctl")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .mode("append")
        .save()
    )
    written = {m.value(): m for m in consume_all(cluster.bootstrap, "out")}
    assert set(written) == {b"a", b"b"}
    a = written[b"a"]
    assert (a.key(), a.partition(), a.headers()) == (b"x", 1, [("h", b"1")])
    assert (written[b"b"].key(), written[b"b"].partition()) == (None, 0)


@pytest.mark.interop
def test_the_source_reads_librdkafkas_mock_cluster(spark):
    topic = f"t-{uuid.uuid4().hex[:8]}"
    with mock_cluster(brokers=1) as bootstrap:
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(50):
            producer.produce(topic, f"m{i}".encode(), key=str(i % 4).encode())
        assert producer.flush(30) == 0
        rows = kctl_read(spark, bootstrap, subscribe=topic).select("value", "partition", "offset").collect()
    assert sorted(r.value for r in rows) == sorted(f"m{i}".encode() for i in range(50))
    assert len({(r.partition, r.offset) for r in rows}) == 50


def test_topics_as_json_views_with_an_inferred_schema(spark, cluster):
    create_topic(cluster.bootstrap, "orders", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "orders", [json.dumps({"user": f"u{i % 3}", "amount": i}) for i in range(30)])
    spec = ViewSpec({"bootstrap.servers": cluster.bootstrap}, streaming=False, value_format="json")
    register_views(spark, spec, ["orders"])
    assert spark.table("orders").columns == ["key", "amount", "user", *METADATA]
    totals = spark.sql("SELECT user, sum(amount) AS total FROM orders GROUP BY user ORDER BY user").collect()
    assert [(r.user, r.total) for r in totals] == [("u0", 135), ("u1", 145), ("u2", 155)]
    as_json = as_records(spark.sql("SELECT user, amount FROM orders WHERE amount = 7")).collect()
    assert [json.loads(r.value) for r in as_json] == [{"user": "u1", "amount": 7}]
