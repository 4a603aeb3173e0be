"""key.format/value.format through a real SparkSession, a cluster and a schema registry: records
written by `kctl produce --value-schema` and by confluent-kafka's serializers read into typed
columns, value by value, and DataFrames written in Confluent's wire format read back by
confluent-kafka's AvroDeserializer and `kctl consume`."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import functions as F

from schemaregistry.client import RegistryClient
from tests.cluster_harness import running_cluster
from tests.kafka_helpers import create_topic
from tests.kctl.cli import run_kctl
from tests.schemaregistry.registry_harness import RegistryProcess
from tests.spark.helpers import TIMEOUT_S, consume_all

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "item", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "code", "type": "bytes"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["BOOK", "FOOD"]}},
        {
            "name": "ship",
            "type": [
                "null",
                {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]},
            ],
            "default": None,
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    ],
}
ORDER_TYPE = (
    "struct<id:bigint,qty:int,item:string,note:string,code:binary,tags:array<string>,"
    "attrs:map<string,bigint>,kind:string,ship:struct<city:string>,at:timestamp,price:decimal(9,2)>"
)
FLAT_PROTO = """syntax = "proto3";
package shop;

message Line {
  int64 id = 1;
  string item = 2;
  double price = 3;
  bool gift = 4;
}
"""
FLAT_JSON = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "item": {"type": "string"},
        "price": {"type": "number"},
        "gift": {"type": "boolean"},
    },
    "required": ["id"],
}
LINES = [{"id": i, "item": f"item-{i}", "price": i + 0.25, "gift": i % 2 == 0} for i in range(12)]


def order(i: int) -> dict:
    """An Order as kctl produce takes it (JSON: bytes one character a byte, timestamps in millis)."""
    return {
        "id": i,
        "qty": i % 3,
        "item": f"item-{i}",
        "note": None if i % 2 else f"note {i}",
        "code": "\x00\xff" + chr(i),
        "tags": [f"t{j}" for j in range(i % 3)],
        "attrs": {"n": i, "twice": 2 * i},
        "kind": "BOOK" if i % 2 else "FOOD",
        "ship": {"city": f"city-{i}"} if i % 3 else None,
        "at": 1_700_000_000_000 + i,
        "price": f"{i}.50",
    }


def as_spark(value: dict) -> dict:
    """The same Order as PySpark shows it (timestamps as local time, without a zone)."""
    return {**as_avro(value), "at": datetime.datetime.fromtimestamp(value["at"] / 1000)}


def as_avro(value: dict) -> dict:
    """The same Order as confluent-kafka's AvroDeserializer gives it."""
    return {
        **value,
        "code": value["code"].encode("latin-1"),
        "at": datetime.datetime.fromtimestamp(value["at"] / 1000, datetime.UTC),
        "price": Decimal(value["price"]),
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    directory = tmp_path_factory.mktemp("formats")
    with (
        running_cluster(directory / "cluster") as cluster,
        RegistryProcess(cluster.bootstrap, directory) as registry,
    ):
        yield cluster.bootstrap, registry.url


def topic(stack, name: str, partitions: int = 1) -> str:
    create_topic(stack[0], name, partitions, wait_for_leaders=True, timeout=TIMEOUT_S)
    return name


def kctl_produce(stack, tmp_path, name: str, schema: str, suffix: str, values: list) -> None:
    path = tmp_path / f"{name}{suffix}"
    path.write_text(schema)
    lines = "".join(json.dumps(v) + "\n" for v in values)
    bootstrap, url = stack
    result = run_kctl(
        "produce", name, "-b", bootstrap, "--schema-registry", url, "--value-schema", str(path), input=lines
    )
    assert result.returncode == 0, result.stderr


def produce_raw(stack, name: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": stack[0]})
    for value in values:
        producer.produce(name, value)
    assert producer.flush(TIMEOUT_S) == 0


def read(spark, stack, name: str, **options):
    return (
        spark.read.format("kctl")
        .option("kafka.bootstrap.servers", stack[0])
        .option("schema.registry.url", stack[1])
        .option("subscribe", name)
        .options(**options)
        .load()
    )


def by_offset(df) -> list:
    return sorted(df.collect(), key=lambda row: row.offset)


def test_avro_from_kctl_produce_reads_into_typed_columns_and_keeps_what_does_not_decode(
    spark, stack, tmp_path
):
    name = topic(stack, "orders")
    values = [order(i) for i in range(30)]
    kctl_produce(stack, tmp_path, name, json.dumps(ORDER), ".avsc", values)
    unknown_id = b"\x00\x00\x00\x03\xe7" + b"\x02"
    produce_raw(stack, name, [b"plain text", unknown_id])

    df = read(spark, stack, name, **{"value.format": "avro"})
    assert df.schema.simpleString() == (
        f"struct<key:binary,value:{ORDER_TYPE},topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,value_schema_id:int,value_error:string,value_raw:binary>"
    )
    rows = by_offset(df)
    assert [r.value.asDict(recursive=True) for r in rows[:30]] == [as_spark(v) for v in values]
    registered = RegistryClient(stack[1]).version("orders-value", "latest")["id"]
    assert {r.value_schema_id for r in rows[:30]} == {registered}
    assert {(r.value_error, r.value_raw) for r in rows[:30]} == {(None, None)}

    plain, unknown = rows[30:]
    assert (plain.value, plain.value_schema_id, plain.value_raw) == (None, None, b"plain text")
    assert "not in Confluent's wire format" in plain.value_error
    assert (unknown.value, unknown.value_schema_id, unknown.value_raw) == (None, 999, unknown_id)
    assert unknown.value_error.startswith("schema 999: ")

    with pytest.raises(Exception, match="does not decode"):
        read(spark, stack, name, **{"value.format": "avro", "failOnDecodeError": "true"}).collect()


def test_avro_written_by_confluents_serializer_reads_with_the_latest_schema_as_reader(spark, stack):
    """Records of an earlier version read with the latest one: Avro's resolution fills a
    field added since with its default. Streaming, in micro-batches."""
    name = topic(stack, "users", partitions=2)
    v1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "team", "type": "string", "default": "none"}]}
    client = SchemaRegistryClient({"url": stack[1]})
    producer = Producer({"bootstrap.servers": stack[0]})
    for schema, users in ((v1, [{"name": "ann"}, {"name": "bob"}]), (v2, [{"name": "cy", "team": "red"}])):
        serialize = AvroSerializer(client, json.dumps(schema))
        for user in users:
            producer.produce(name, serialize(user, SerializationContext(name, MessageField.VALUE)))
    assert producer.flush(TIMEOUT_S) == 0

    seen: list = []
    query = (
        spark.readStream.format("kctl")
        .option("kafka.bootstrap.servers", stack[0])
        .option("schema.registry.url", stack[1])
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "2")
        .option("value.format", "avro")
        .load()
        .writeStream.foreachBatch(lambda df, _: seen.extend(df.select("value.*").collect()))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert sorted((r.name, r.team) for r in seen) == [("ann", "none"), ("bob", "none"), ("cy", "red")]


def test_a_dataframe_written_as_avro_is_read_by_confluents_deserializer_and_kctl_consume(spark, stack):
    name = topic(stack, "written")
    RegistryClient(stack[1]).register(f"{name}-value", json.dumps(ORDER))
    values = [as_spark(order(i)) for i in range(10)] + [None]
    df = spark.createDataFrame(
        [(f"k{i}", v) for i, v in enumerate(values)], f"key string, value {ORDER_TYPE}"
    )
    (
        df.write.format("kctl")
        .option("kafka.bootstrap.servers", stack[0])
        .option("schema.registry.url", stack[1])
        .option("topic", name)
        .option("value.format", "avro")
        .mode("append")
        .save()
    )
    messages = {m.key(): m.value() for m in consume_all(stack[0], name)}
    assert messages[b"k10"] is None  # a null value is a tombstone, not encoded
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": stack[1]}))
    context = SerializationContext(name, MessageField.VALUE)
    decoded = [deserialize(messages[f"k{i}".encode()], context) for i in range(10)]
    assert decoded == [as_avro(order(i)) for i in range(10)]
    shown = run_kctl("consume", name, "-e", "--json", "-b", stack[0], "--schema-registry", stack[1])
    assert shown.returncode == 0, shown.stderr
    documents = [json.loads(line) for line in shown.stdout.decode().splitlines()]
    shown_values = sorted(
        (d["value_decoded"] for d in documents if "value_decoded" in d), key=lambda v: v["id"]
    )
    assert shown_values == [order(i) for i in range(10)]


def test_topic_to_topic_streaming_with_auto_registered_avro_keys_and_values(spark, stack, tmp_path):
    """Typed records read, reshaped and written with a schema derived from the DataFrame,
    registered under the target's subjects, by the exactly-once streaming sink."""
    source, target = topic(stack, "clicks"), topic(stack, "clicks-by-user")
    kctl_produce(stack, tmp_path, source, json.dumps(ORDER), ".avsc", [order(i) for i in range(8)])
    query = (
        spark.readStream.format("kctl")
        .option("kafka.bootstrap.servers", stack[0])
        .option("schema.registry.url", stack[1])
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("value.format", "avro")
        .load()
        .select(
            F.struct(F.col("value.item").alias("item")).alias("key"),
            F.struct("value.id", "value.tags", "value.ship", "value.at").alias("value"),
        )
        .writeStream.format("kctl")
        .option("kafka.bootstrap.servers", stack[0])
        .option("schema.registry.url", stack[1])
        .option("topic", target)
        .option("key.format", "avro")
        .option("value.format", "avro")
        .option("auto.register.schemas", "true")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None

    registry = RegistryClient(stack[1])
    assert {f"{target}-key", f"{target}-value"} <= set(registry.subjects())
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": stack[1]}))
    got = [
        (
            deserialize(m.key(), SerializationContext(target, MessageField.KEY)),
            deserialize(m.value(), SerializationContext(target, MessageField.VALUE)),
        )
        for m in consume_all(stack[0], target)
    ]
    expected = [
        ({"item": o["item"]}, {"id": o["id"], "tags": o["tags"], "ship": o["ship"], "at": as_avro(o)["at"]})
        for o in map(order, range(8))
    ]
    assert sorted(got, key=lambda kv: kv[1]["id"]) == expected

    back = read(spark, stack, target, **{"key.format": "avro", "value.format": "avro"})
    assert [r.key.item for r in by_offset(back)] == [o["item"] for o in map(order, range(8))]
    assert {r.key_error for r in back.collect()} == {None}


@pytest.mark.parametrize(
    ("fmt", "suffix", "schema"),
    [("protobuf", ".proto", FLAT_PROTO), ("json-schema", ".json", json.dumps(FLAT_JSON))],
)
def test_flat_records_from_kctl_produce_read_into_typed_columns(spark, stack, tmp_path, fmt, suffix, schema):
    name = topic(stack, f"lines-{fmt}")
    kctl_produce(stack, tmp_path, name, schema, suffix, LINES)
    df = read(spark, stack, name, **{"value.format": fmt})
    assert (
        df.schema["value"].dataType.simpleString()
        == "struct<id:bigint,item:string,price:double,gift:boolean>"
    )
    rows = by_offset(df)
    assert [r.value.asDict() for r in rows] == LINES
    assert {r.value_error for r in rows} == {None}
