"""API v3 over HTTP only, as curl would call it, against a real cluster and registry: the
cluster, topics created, described and deleted, records produced one at a time and as a chunked
stream answered record by record while it is still being sent, and a consumer group's lags."""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.kafka_helpers import consume_all, create_topic, watermarks
from tests.restproxy.proxy_harness import ProxyProcess, proxy_with_registry
from tests.service_harness import call

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """(bootstrap, registry URL, proxy URL, cluster id)."""
    with proxy_with_registry(tmp_path_factory.mktemp("v3")) as (bootstrap, registry, url):
        cluster_id = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).cluster_id
        yield bootstrap, registry, url, cluster_id


def records_path(cluster_id: str, topic: str) -> str:
    return f"/v3/clusters/{cluster_id}/topics/{topic}/records"


def connect(url: str) -> http.client.HTTPConnection:
    host, port = url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=30)


def stream(url: str, path: str, chunks: Iterator[bytes]) -> tuple[int, list[dict]]:
    """POST the chunks as one chunked body; the status and every reply line."""
    connection = connect(url)
    try:
        headers = {"Content-Type": "application/json"}
        connection.request("POST", path, body=chunks, headers=headers, encode_chunked=True)
        response = connection.getresponse()
        return response.status, [json.loads(line) for line in response.read().splitlines() if line.strip()]
    finally:
        connection.close()


def test_the_cluster_is_listed_under_the_id_its_brokers_report(proxy):
    _, _, url, cluster_id = proxy
    status, clusters = call(url, "GET", "/v3/clusters")
    assert status == 200 and clusters["kind"] == "KafkaClusterList"
    [cluster] = clusters["data"]
    assert cluster["kind"] == "KafkaCluster" and cluster["cluster_id"] == cluster_id
    assert cluster["metadata"] == {
        "self": f"{url}/v3/clusters/{cluster_id}",
        "resource_name": f"crn:///kafka={cluster_id}",
    }
    assert cluster["topics"] == {"related": f"{url}/v3/clusters/{cluster_id}/topics"}
    assert call(url, "GET", f"/v3/clusters/{cluster_id}") == (200, cluster)
    assert call(url, "GET", "/v3/clusters/nosuch") == (
        404,
        {"error_code": 404, "message": "Cluster nosuch cannot be found."},
    )


def test_a_topic_is_created_described_and_deleted(proxy):
    bootstrap, _, url, cluster_id = proxy
    topics = f"/v3/clusters/{cluster_id}/topics"
    body = {
        "topic_name": "made",
        "partitions_count": 3,
        "replication_factor": 1,
        "configs": [{"name": "cleanup.policy", "value": "compact"}],
    }
    status, created = call(url, "POST", topics, body)
    assert status == 201, created
    assert created["kind"] == "KafkaTopic" and created["topic_name"] == "made"
    assert created["partitions_count"] == 3 and created["replication_factor"] == 1
    assert created["metadata"]["resource_name"] == f"crn:///kafka={cluster_id}/topic=made"
    assert call(url, "GET", "/topics/made")[1]["configs"]["cleanup.policy"] == "compact"
    assert call(url, "GET", f"{topics}/made") == (200, created)
    listed = call(url, "GET", topics)[1]
    assert listed["kind"] == "KafkaTopicList" and "made" in [t["topic_name"] for t in listed["data"]]
    status, partitions = call(url, "GET", f"{topics}/made/partitions")
    assert status == 200 and [p["partition_id"] for p in partitions["data"]] == [0, 1, 2]
    status, partition = call(url, "GET", f"{topics}/made/partitions/2")
    assert status == 200 and partition["kind"] == "KafkaPartition" and partition["topic_name"] == "made"
    assert partition["leader"] == {"related": f"{url}{topics}/made/partitions/2/replicas/1"}
    assert call(url, "GET", f"{topics}/made/partitions/3")[0] == 404
    status, exists = call(url, "POST", topics, body)
    assert status == 400 and exists["error_code"] == 40002 and "already exists" in exists["message"]
    assert call(url, "DELETE", f"{topics}/made") == (204, "")
    gone = {"error_code": 40403, "message": "This server does not host this topic-partition."}
    assert call(url, "GET", f"{topics}/made") == (404, gone)
    assert call(url, "DELETE", f"{topics}/made") == (404, gone)


def test_topic_bodies_must_be_json_of_the_right_shape(proxy):
    _, _, url, cluster_id = proxy
    topics = f"/v3/clusters/{cluster_id}/topics"
    assert call(url, "POST", topics, {"topic_name": "x"}, content_type="text/plain")[0] == 415
    assert call(url, "POST", topics, raw=b"{", content_type="application/json")[1]["error_code"] == 400
    status, answer = call(url, "POST", topics, {"partitions_count": 1})
    assert status == 422 and answer["message"].startswith("topic_name")


def test_a_thousand_records_as_one_stream_are_answered_in_order_and_all_arrive(proxy):
    bootstrap, _, url, cluster_id = proxy
    create_topic(bootstrap, "streamed", partitions=3)

    def chunks() -> Iterator[bytes]:
        for first in range(0, 1000, 50):  # 50 records a chunk, each chunk one write
            yield b"".join(
                json.dumps(
                    {
                        "key": {"type": "STRING", "data": f"k{i % 5}"},
                        "value": {"type": "JSON", "data": {"n": i}},
                    }
                ).encode()
                + b"\n"
                for i in range(first, first + 50)
            )

    status, replies = stream(url, records_path(cluster_id, "streamed"), chunks())
    assert status == 200 and len(replies) == 1000
    assert all(r["error_code"] == 200 and r["topic_name"] == "streamed" for r in replies), replies[:3]
    assert replies[0]["key"] == {"type": "STRING", "size": 2} and replies[0]["value"]["type"] == "JSON"
    where = {(r["partition_id"], r["offset"]): i for i, r in enumerate(replies)}
    got = consume_all(bootstrap, "streamed", 3, 1000)
    per_partition: dict[int, list[int]] = {}
    for partition, offset, key, value in got:
        n = json.loads(value)["n"]
        assert where[(partition, offset)] == n and key == f"k{n % 5}".encode()
        per_partition.setdefault(partition, []).append(n)
    assert sorted(n for ns in per_partition.values() for n in ns) == list(range(1000))
    assert all(ns == sorted(ns) for ns in per_partition.values())


def test_each_record_of_a_stream_is_answered_while_the_stream_is_still_being_sent(proxy):
    bootstrap, _, url, cluster_id = proxy
    create_topic(bootstrap, "live")
    connection = connect(url)
    try:
        connection.putrequest("POST", records_path(cluster_id, "live"))
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        response = None
        for i in range(3):
            record = json.dumps({"value": {"type": "JSON", "data": i}}).encode()
            connection.send(b"%x\r\n%s\r\n" % (len(record), record))
            response = response or connection.getresponse()
            reply = json.loads(response.readline())
            assert reply["error_code"] == 200 and reply["offset"] == i  # before the body ends
        connection.send(b"0\r\n\r\n")
        assert response is not None and response.read().strip() == b""
    finally:
        connection.close()


def test_a_record_that_fails_gets_its_error_in_its_place_and_the_stream_goes_on(proxy):
    bootstrap, _, url, cluster_id = proxy
    create_topic(bootstrap, "mixed")
    records = [
        {"value": {"type": "JSON", "data": 1}},
        {"partition_id": 7, "value": {"type": "JSON", "data": 2}},
        {"value": {"type": "BINARY", "data": "not base64!"}},
        {"value": {"type": "XML", "data": "<a/>"}},
        {"value": {"type": "JSON", "data": 3}},
    ]
    status, replies = stream(
        url, records_path(cluster_id, "mixed"), iter([json.dumps(r).encode() for r in records])
    )
    assert status == 200
    assert [r["error_code"] for r in replies] == [200, 40402, 42207, 422, 200]
    assert [r["offset"] for r in (replies[0], replies[4])] == [0, 1]
    status, replies = stream(
        url, records_path(cluster_id, "mixed"), iter([b'{"value": {"data": "AA=="}} {"val', b'ue": ]}'])
    )
    assert status == 200 and [r["error_code"] for r in replies] == [200, 400]
    assert replies[1]["message"].startswith("Unexpected character")
    assert watermarks(bootstrap, "mixed")[1] == 3


def test_one_record_with_binary_key_headers_and_timestamp(proxy):
    bootstrap, _, url, cluster_id = proxy
    create_topic(bootstrap, "single", partitions=2)
    body = {
        "partition_id": 1,
        "headers": [{"name": "trace", "value": base64.b64encode(b"\x00\x01").decode()}, {"name": "empty"}],
        "key": {"type": "BINARY", "data": base64.b64encode(b"\xffkey").decode()},
        "value": {"data": base64.b64encode(bytes(range(256))).decode()},
        "timestamp": "2024-05-06T07:08:09.010Z",
    }
    status, reply = call(url, "POST", records_path(cluster_id, "single"), body)
    assert status == 200, reply
    assert reply == {
        "error_code": 200,
        "cluster_id": cluster_id,
        "topic_name": "single",
        "partition_id": 1,
        "offset": 0,
        "timestamp": "2024-05-06T07:08:09.010Z",
        "key": {"type": "BINARY", "size": 4},
        "value": {"type": "BINARY", "size": 256},
    }
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        consumer.assign([TopicPartition("single", 1, 0)])
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        assert message.key() == b"\xffkey" and message.value() == bytes(range(256))
        assert message.headers() == [("trace", b"\x00\x01"), ("empty", None)]
        assert message.timestamp()[1] == 1714979289010
    finally:
        consumer.close()


def test_one_record_that_fails_is_answered_with_its_errors_status(proxy):
    bootstrap, _, url, cluster_id = proxy
    create_topic(bootstrap, "refusing")
    path = records_path(cluster_id, "refusing")
    assert call(url, "POST", path, {"partition_id": 3, "value": {"data": "AA=="}})[1]["error_code"] == 40402
    assert call(url, "POST", path, {"value": {"type": "STRING", "data": 5}})[0] == 422
    assert call(url, "POST", path, raw=b'{"value": ', content_type="application/json")[0] == 400
    assert call(url, "POST", path, raw=b"", content_type="application/json")[0] == 400
    assert call(url, "POST", path, {"value": {"data": "AA=="}}, content_type="text/plain")[0] == 415
    assert call(url, "POST", records_path(cluster_id, "nosuch"), {"value": {"data": "AA=="}}) == (
        404,
        {"error_code": 40403, "message": "This server does not host this topic-partition."},
    )
    assert call(url, "POST", records_path("nosuch", "refusing"), {"value": {"data": "AA=="}})[0] == 404
    assert watermarks(bootstrap, "refusing")[1] == 0


def test_an_avro_value_with_its_schema_is_registered_and_decodes(proxy):
    bootstrap, registry, url, cluster_id = proxy
    create_topic(bootstrap, "v3-avro")
    schema = json.dumps({"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]})
    body = {"value": {"type": "AVRO", "schema": schema, "data": {"x": 3}}}
    status, reply = call(url, "POST", records_path(cluster_id, "v3-avro"), body)
    assert status == 200, reply
    latest = call(registry, "GET", "/subjects/v3-avro-value/versions/latest")[1]
    assert reply["value"]["schema_id"] == latest["id"] and reply["value"]["subject"] == "v3-avro-value"
    by_subject = {"value": {"type": "AVRO", "data": {"x": 4}}}  # the subject's latest version
    assert (
        call(url, "POST", records_path(cluster_id, "v3-avro"), by_subject)[1]["value"]["schema_id"]
        == latest["id"]
    )
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry}))
    context = SerializationContext("v3-avro", MessageField.VALUE)
    got = [deserializer(value, context) for _, _, _, value in consume_all(bootstrap, "v3-avro", 1, 2)]
    assert got == [{"x": 3}, {"x": 4}]


def test_a_groups_lag_summary_and_lags_after_it_commits(proxy):
    bootstrap, _, url, cluster_id = proxy
    create_topic(bootstrap, "lagging", partitions=2)
    for i in range(10):
        record = {"partition_id": i % 2, "value": {"type": "JSON", "data": i}}
        assert call(url, "POST", records_path(cluster_id, "lagging"), record)[0] == 200
    create_topic(bootstrap, "doomed")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "laggards", "enable.auto.commit": False})
    try:
        committed = [
            TopicPartition("lagging", 0, 2),
            TopicPartition("lagging", 1, 5),
            TopicPartition("doomed", 0, 0),
        ]
        consumer.commit(offsets=committed, asynchronous=False)
    finally:
        consumer.close()
    assert call(url, "DELETE", f"/v3/clusters/{cluster_id}/topics/doomed")[0] == 204  # its lag is left out
    groups = f"/v3/clusters/{cluster_id}/consumer-groups"
    status, summary = call(url, "GET", f"{groups}/laggards/lag-summary")
    assert status == 200 and summary["kind"] == "KafkaConsumerGroupLagSummary", summary
    assert summary["total_lag"] == 3 and summary["max_lag"] == 3
    assert summary["max_lag_topic_name"] == "lagging" and summary["max_lag_partition_id"] == 0
    status, lags = call(url, "GET", f"{groups}/laggards/lags")
    assert status == 200 and lags["kind"] == "KafkaConsumerLagList"
    assert [
        (lag["partition_id"], lag["current_offset"], lag["log_end_offset"], lag["lag"])
        for lag in lags["data"]
    ] == [
        (0, 2, 5, 3),
        (1, 5, 5, 0),
    ]
    status, group = call(url, "GET", f"{groups}/laggards")
    assert status == 200 and group["consumer_group_id"] == "laggards" and group["state"] == "EMPTY"
    assert "laggards" in [g["consumer_group_id"] for g in call(url, "GET", groups)[1]["data"]]
    assert call(url, "GET", f"{groups}/nosuch/lag-summary")[0] == 404


def test_a_stream_past_the_body_limit_ends_with_a_413_after_the_records_before_it(proxy, tmp_path):
    bootstrap, _, _, cluster_id = proxy
    create_topic(bootstrap, "limited")
    record = json.dumps({"value": {"type": "STRING", "data": "x" * 200}}).encode()
    with ProxyProcess(bootstrap, tmp_path, "--max-body-bytes", "10000") as small:
        connection = connect(small.url)
        try:
            connection.putrequest("POST", records_path(cluster_id, "limited"))
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Transfer-Encoding", "chunked")
            connection.endheaders()
            response, replies = None, []
            while not replies or replies[-1]["error_code"] == 200:  # one record at a time
                connection.send(b"%x\r\n%s\r\n" % (len(record), record))
                response = response or connection.getresponse()
                replies.append(json.loads(response.readline()))
        finally:
            connection.close()
    assert response is not None and response.status == 200
    assert replies[-1] == {"error_code": 413, "message": "HTTP 413 Request Entity Too Large"}
    assert len(replies) - 1 == 10000 // len(record)  # every record within the limit was produced
    assert watermarks(bootstrap, "limited")[1] == len(replies) - 1
