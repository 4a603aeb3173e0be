"""API v2's produce and cluster views over HTTP only, as curl would call them, against a real
cluster and registry: every record of a large request arrives in order, binary values round-trip
byte for byte, schema texts are registered and their records decode with confluent-kafka's
deserializers, and bad input gets Confluent's status, code and message."""

from __future__ import annotations

import base64
import http.client
import json
import os

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from schemaregistry import schemas, serde, wire
from tests.kafka_helpers import consume_all, create_topic, watermarks
from tests.restproxy.proxy_harness import (
    AVRO_V2,
    BINARY_V2,
    JSON_V2,
    JSONSCHEMA_V2,
    PROTOBUF_V2,
    proxy_with_registry,
)
from tests.service_harness import call, declare_body

pytestmark = pytest.mark.cluster

ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
    }
)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """(bootstrap, registry URL, proxy URL)."""
    with proxy_with_registry(tmp_path_factory.mktemp("v2produce")) as urls:
        create_topic(urls[0], "checked")  # what the bad requests are aimed at
        yield urls


def produce(url: str, path: str, body: dict, content_type: str = JSON_V2) -> tuple[int, dict]:
    return call(url, "POST", path, body, content_type=content_type)


def test_a_thousand_json_records_in_one_request_all_arrive_in_order_per_partition(proxy):
    bootstrap, _, url = proxy
    create_topic(bootstrap, "orders", partitions=3)
    records = [{"key": f"customer-{i % 7}", "value": {"n": i, "item": "tea"}} for i in range(1000)]
    status, answer = produce(url, "/topics/orders", {"records": records})
    assert status == 200, answer
    assert answer["key_schema_id"] is None and answer["value_schema_id"] is None
    offsets = answer["offsets"]
    assert len(offsets) == 1000 and all(o["error_code"] is None and o["error"] is None for o in offsets)
    replied = {(o["partition"], o["offset"]): i for i, o in enumerate(offsets)}
    got = consume_all(bootstrap, "orders", 3, 1000)
    assert len(got) == 1000
    by_partition: dict[int, list[int]] = {}
    for partition, offset, key, value in got:
        n = json.loads(value)["n"]
        assert replied[(partition, offset)] == n  # the reply says where each record went
        assert key == f'"customer-{n % 7}"'.encode()  # a JSON key is JSON text too
        assert value == json.dumps({"n": n, "item": "tea"}, separators=(",", ":")).encode()
        by_partition.setdefault(partition, []).append(n)
    assert sorted(n for ns in by_partition.values() for n in ns) == list(range(1000))
    assert all(ns == sorted(ns) for ns in by_partition.values())
    keys_per_partition = [{n % 7 for n in ns} for ns in by_partition.values()]
    assert sum(len(keys) for keys in keys_per_partition) == 7  # one key, one partition


def test_binary_values_round_trip_byte_for_byte(proxy):
    bootstrap, _, url = proxy
    create_topic(bootstrap, "blobs")
    values = [bytes(range(256)), os.urandom(5000), b"", b"\x00"]
    records = [
        {"key": base64.b64encode(b"k%d" % i).decode(), "value": base64.b64encode(v).decode()}
        for i, v in enumerate(values)
    ]
    status, answer = produce(url, "/topics/blobs", {"records": records + [{"value": None}]}, BINARY_V2)
    assert status == 200 and [o["offset"] for o in answer["offsets"]] == [0, 1, 2, 3, 4]
    got = consume_all(bootstrap, "blobs", 1, 5)
    assert [(key, value) for _, _, key, value in got] == [
        *[(b"k%d" % i, v) for i, v in enumerate(values)],
        (None, None),
    ]


def test_records_go_to_the_partition_in_the_path_or_in_the_record(proxy):
    bootstrap, _, url = proxy
    create_topic(bootstrap, "placed", partitions=3)
    status, answer = produce(url, "/topics/placed/partitions/2", {"records": [{"value": 1}, {"value": 2}]})
    assert status == 200 and {o["partition"] for o in answer["offsets"]} == {2}
    status, answer = produce(url, "/topics/placed", {"records": [{"value": 3, "partition": 1}]})
    assert status == 200 and answer["offsets"][0]["partition"] == 1
    assert watermarks(bootstrap, "placed", 2)[1] == 2 and watermarks(bootstrap, "placed", 1)[1] == 1


def test_an_avro_value_schema_is_registered_and_its_records_decode_with_confluents_deserializer(proxy):
    bootstrap, registry, url = proxy
    create_topic(bootstrap, "avro-orders")
    body = {"value_schema": ORDER, "records": [{"value": {"id": 1, "item": "tea"}}]}
    status, answer = produce(url, "/topics/avro-orders", body, AVRO_V2)
    assert status == 200 and answer["offsets"][0]["error_code"] is None, answer
    schema_id = answer["value_schema_id"]
    latest = call(registry, "GET", "/subjects/avro-orders-value/versions/latest")[1]
    assert latest["id"] == schema_id and json.loads(latest["schema"]) == json.loads(ORDER)
    by_id = {"value_schema_id": schema_id, "records": [{"value": {"id": 2, "item": "cake"}}]}
    assert produce(url, "/topics/avro-orders", by_id, AVRO_V2)[1]["value_schema_id"] == schema_id
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry}))
    context = SerializationContext("avro-orders", MessageField.VALUE)
    values = [deserializer(value, context) for _, _, _, value in consume_all(bootstrap, "avro-orders", 1, 2)]
    assert values == [{"id": 1, "item": "tea"}, {"id": 2, "item": "cake"}]


def test_json_schema_and_protobuf_keys_and_values_are_framed_with_their_schema_ids(proxy):
    bootstrap, registry, url = proxy
    create_topic(bootstrap, "framed")
    create_topic(bootstrap, "framed-proto")
    json_schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    body = {
        "key_schema": json_schema,
        "value_schema": json_schema,
        "records": [{"key": {"n": 1}, "value": {"n": 2}}],
    }
    status, answer = produce(url, "/topics/framed", body, JSONSCHEMA_V2)
    assert status == 200 and answer["key_schema_id"] and answer["value_schema_id"], answer
    proto = 'syntax = "proto3"; message Reading { string sensor = 1; int64 value = 2; }'
    body = {"value_schema": proto, "records": [{"value": {"sensor": "s1", "value": 7}}]}
    status, answer = produce(url, "/topics/framed-proto", body, PROTOBUF_V2)
    assert status == 200 and answer["offsets"][0]["error_code"] is None, answer
    [(_, _, key, first)] = consume_all(bootstrap, "framed", 1, 1)
    [(_, _, _, second)] = consume_all(bootstrap, "framed-proto", 1, 1)
    assert wire.unframe(key)[2] == b'{"n":1}' and wire.unframe(first)[2] == b'{"n":2}'
    schema_id, indexes, data = wire.unframe(second, protobuf=True)
    assert schema_id == answer["value_schema_id"]
    parsed = schemas.parse("PROTOBUF", call(registry, "GET", f"/schemas/ids/{schema_id}")[1]["schema"])
    assert serde.decode(parsed, indexes, data) == {"sensor": "s1", "value": "7"}


def test_each_record_gets_its_own_kafka_error(proxy):
    bootstrap, _, url = proxy
    create_topic(bootstrap, "small", partitions=2, configs={"max.message.bytes": "2000"})
    big = base64.b64encode(os.urandom(5000)).decode()
    records = [{"value": "c21hbGw=", "partition": 0}, {"value": big, "partition": 1}]
    status, answer = produce(url, "/topics/small", {"records": records}, BINARY_V2)
    assert status == 200
    fine, refused = answer["offsets"]
    assert fine == {"partition": 0, "offset": 0, "error_code": None, "error": None}
    assert refused["partition"] is None and refused["offset"] is None
    assert refused["error_code"] == 50002 and "too large" in refused["error"].lower()


BAD_REQUESTS = [
    ("unknown topic", "/topics/nosuch", JSON_V2, {"records": [{"value": 1}]}, 404, 40401),
    ("unknown partition", "/topics/checked/partitions/5", JSON_V2, {"records": [{"value": 1}]}, 404, 40402),
    (
        "record's partition",
        "/topics/checked",
        JSON_V2,
        {"records": [{"value": 1, "partition": 9}]},
        404,
        40402,
    ),
    ("no embedded format", "/topics/checked", "application/vnd.kafka.v2+json", {"records": []}, 415, 415),
    ("plain JSON", "/topics/checked", "application/json", {"records": []}, 415, 415),
    ("text", "/topics/checked", "text/plain", {"records": []}, 415, 415),
    ("not base64", "/topics/checked", BINARY_V2, {"records": [{"value": "not base64!"}]}, 422, 42207),
    ("JSON in binary", "/topics/checked", BINARY_V2, {"records": [{"value": {"a": 1}}]}, 422, 42207),
    ("no value schema", "/topics/checked", AVRO_V2, {"records": [{"value": {"id": 1}}]}, 422, 42202),
    (
        "no key schema",
        "/topics/checked",
        AVRO_V2,
        {"value_schema": ORDER, "records": [{"key": 1, "value": {"id": 1, "item": "x"}}]},
        422,
        42201,
    ),
    ("bad schema", "/topics/checked", AVRO_V2, {"value_schema": "{", "records": [{"value": 1}]}, 422, 42205),
    ("no records", "/topics/checked", JSON_V2, {"value": 1}, 422, 422),
]


@pytest.mark.parametrize(
    "path, content_type, body, status, code", [b[1:] for b in BAD_REQUESTS], ids=[b[0] for b in BAD_REQUESTS]
)
def test_bad_requests_get_confluents_status_and_code_and_send_nothing(
    proxy, path, content_type, body, status, code
):
    bootstrap, _, url = proxy
    answer = produce(url, path, body, content_type)
    assert answer[0] == status and answer[1]["error_code"] == code, answer
    assert watermarks(bootstrap, "checked")[1] == 0


def test_a_value_its_schema_cannot_hold_names_the_field(proxy):
    bootstrap, _, url = proxy
    create_topic(bootstrap, "misfits")
    body = {"value_schema": ORDER, "records": [{"value": {"id": 1, "item": "ok"}}, {"value": {"id": "x"}}]}
    status, answer = produce(url, "/topics/misfits", body, AVRO_V2)
    assert status == 422 and answer["error_code"] == 42203
    assert (
        answer["message"].startswith("Conversion of JSON to object failed: ") and "/id" in answer["message"]
    )
    assert watermarks(bootstrap, "misfits")[1] == 0  # the good record was not sent either


def test_malformed_json_is_a_400(proxy):
    _, _, url = proxy
    status, answer = call(url, "POST", "/topics/checked", raw=b'{"records": [', content_type=JSON_V2)
    assert (
        status == 400 and answer["error_code"] == 400 and answer["message"].startswith("Unexpected character")
    )


def test_a_request_of_more_records_than_the_bound_is_refused(proxy):
    _, _, url = proxy
    body = {"records": [{"value": 1}] * 10_001}
    status, answer = produce(url, "/topics/checked", body)
    assert status == 422 and answer["error_code"] == 42208


def test_a_body_past_the_limit_is_a_413_whether_declared_or_chunked_and_sends_nothing(proxy):
    bootstrap, _, url = proxy
    too_large = {"error_code": 413, "message": "HTTP 413 Request Entity Too Large"}
    assert declare_body(url, "/topics/checked", 9 << 20, JSON_V2) == (413, too_large)
    record = json.dumps({"value": "x" * 1000}).encode()
    chunks = iter([b'{"records": [', *[record + b","] * 9000, record + b"]}"])  # 9 MB past 8 MiB
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        headers = {"Content-Type": JSON_V2}
        connection.request("POST", "/topics/checked", body=chunks, headers=headers, encode_chunked=True)
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())) == (413, too_large)
    finally:
        connection.close()
    assert watermarks(bootstrap, "checked")[1] == 0
    assert call(url, "GET", "/topics/checked")[0] == 200  # and it goes on answering


def test_topics_partitions_and_brokers(proxy):
    bootstrap, _, url = proxy
    create_topic(bootstrap, "described", partitions=2, configs={"retention.ms": "12345"})
    status, names = call(url, "GET", "/topics")
    assert status == 200 and "described" in names and names == sorted(names)
    status, topic = call(url, "GET", "/topics/described")
    assert status == 200 and topic["name"] == "described"
    assert topic["configs"]["retention.ms"] == "12345"
    leader = {"partition": 0, "leader": 1, "replicas": [{"broker": 1, "leader": True, "in_sync": True}]}
    assert topic["partitions"][0] == leader and len(topic["partitions"]) == 2
    assert call(url, "GET", "/topics/described/partitions") == (200, topic["partitions"])
    assert call(url, "GET", "/topics/described/partitions/0") == (200, leader)
    assert call(url, "GET", "/topics/described/partitions/7")[1]["error_code"] == 40402
    assert call(url, "GET", "/topics/nosuch")[1]["error_code"] == 40401
    assert call(url, "GET", "/brokers") == (200, {"brokers": [1]})
