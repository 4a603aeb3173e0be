"""v2 consumer instances over HTTP alone, as curl would call them, against a real broker, a
schema registry and the proxy's own process: a group reads and commits, a restarted proxy's
new instance starts from the commit, each embedded format, positions and assignments, expiry
releasing the group membership at once, and Confluent's error codes."""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from restproxy.clients import Clients
from restproxy.consumer_config import InstanceConfig
from restproxy.consumer_instances import ConsumerInstances
from restproxy.context import Settings
from restproxy.errors import RestError
from tests.cluster_harness import wait_until
from tests.restproxy.proxy_harness import ProxyProcess, proxy_with_registry
from tests.service_harness import call

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

V2 = "application/vnd.kafka.v2+json"
EXPIRY_MS = 2_000


@dataclass
class Stack:
    bootstrap: str
    registry: str
    proxy: str  # instances live consumer.instance.timeout.ms's default, 5 minutes
    expiring: str  # instances expire after EXPIRY_MS
    directory: Path
    admin: AdminClient


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    directory = tmp_path_factory.mktemp("v2consumers")
    with (
        proxy_with_registry(directory) as (bootstrap, registry, proxy),
        ProxyProcess(bootstrap, directory, "--consumer-instance-timeout-ms", str(EXPIRY_MS)) as expiring,
    ):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        yield Stack(bootstrap, registry, proxy, expiring.url, directory, admin)


def topic(stack: Stack, name: str, partitions: int = 1) -> str:
    stack.admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)
    return name


def produce(stack: Stack, name: str, records: list[tuple[bytes | None, bytes | None, int]]) -> None:
    """(key, value, partition) records, all acknowledged."""
    producer = Producer({"bootstrap.servers": stack.bootstrap})
    for key, value, partition in records:
        producer.produce(name, key=key, value=value, partition=partition)
    assert producer.flush(15) == 0


def create(url: str, group: str, **config: Any) -> str:
    """A new instance's path (from its base_uri), reading from the start of its partitions."""
    status, body = call(url, "POST", f"/consumers/{group}", {"auto.offset.reset": "earliest", **config}, V2)
    assert status == 200, body
    assert body["base_uri"] == f"{url}/consumers/{group}/instances/{body['instance_id']}"
    return body["base_uri"].removeprefix(url)


def records(url: str, path: str, embedded: str = "binary", query: str = "") -> list[dict[str, Any]]:
    status, found = call(
        url, "GET", f"{path}/records{query}", headers={"Accept": f"application/vnd.kafka.{embedded}.v2+json"}
    )
    assert status == 200, found
    return found


def read(url: str, path: str, count: int, embedded: str = "binary", query: str = "") -> list[dict[str, Any]]:
    """Fetch until `count` records came (failing after 30 s)."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(found) < count and time.monotonic() < deadline:
        found += records(url, path, embedded, query)
    assert len(found) == count, f"{len(found)} records of {count}"
    return found


def post(url: str, path: str, body: Any = None) -> tuple[int, Any]:
    return call(url, "POST", path, body, V2)


def members(stack: Stack, group: str) -> int:
    return len(stack.admin.describe_consumer_groups([group])[group].result(15).members)


def test_a_group_reads_all_records_and_commits_and_after_a_restart_starts_from_the_commit(stack):
    orders = topic(stack, "orders", 3)
    produce(stack, orders, [(None, json.dumps({"n": n}).encode(), n % 3) for n in range(2_000)])
    with ProxyProcess(stack.bootstrap, stack.directory) as proxy:
        first = create(proxy.url, "shop", name="first", format="json", **{"auto.commit.enable": "false"})
        assert post(proxy.url, f"{first}/subscription", {"topics": [orders]}) == (204, "")
        assert call(proxy.url, "GET", f"{first}/subscription") == (200, {"topics": [orders]})
        got = read(proxy.url, first, 2_000, "json")
        assert sorted(r["value"]["n"] for r in got) == list(range(2_000))
        assert post(proxy.url, f"{first}/offsets") == (200, [])
        partitions = {"partitions": [{"topic": orders, "partition": p} for p in range(3)]}
        status, committed = call(proxy.url, "GET", f"{first}/offsets", partitions, V2)
        assert status == 200
        assert sorted((o["partition"], o["offset"]) for o in committed["offsets"]) == [
            (0, 667),
            (1, 667),
            (2, 666),
        ]
    with ProxyProcess(stack.bootstrap, stack.directory) as restarted:
        assert call(restarted.url, "GET", f"{first}/subscription")[1]["error_code"] == 40403
        second = create(restarted.url, "shop", name="second", format="json")
        assert post(restarted.url, f"{second}/subscription", {"topics": [orders]}) == (204, "")
        produce(stack, orders, [(None, json.dumps({"n": n}).encode(), n % 3) for n in range(2_000, 2_010)])
        got = read(restarted.url, second, 10, "json")
        assert sorted(r["value"]["n"] for r in got) == list(range(2_000, 2_010))
        assert records(restarted.url, second, "json") == []


def test_a_stopped_proxy_closes_its_instances_and_they_leave_their_groups(stack):
    name = topic(stack, "stopping")
    with ProxyProcess(stack.bootstrap, stack.directory) as proxy:
        path = create(proxy.url, "stoppers")
        assert post(proxy.url, f"{path}/subscription", {"topics": [name]})[0] == 204
        wait_until(
            lambda: records(proxy.url, path, query="?timeout=200") == [] and members(stack, "stoppers"),
            20,
            "a member",
        )
        assert proxy.stop() == 0
    wait_until(lambda: members(stack, "stoppers") == 0, 5, "the instance to leave its group")


def test_binary_keys_and_values_round_trip_byte_for_byte(stack):
    name = topic(stack, "bytes")
    sent = [
        (None, bytes(range(256))),
        (b"k\x00\xff", b""),
        (b"", os.urandom(10_000)),
        (b"tombstone", None),
    ]
    produce(stack, name, [(key, value, 0) for key, value in sent])
    path = create(stack.proxy, "bytes-readers")
    assert (
        post(stack.proxy, f"{path}/assignments", {"partitions": [{"topic": name, "partition": 0}]})[0] == 204
    )
    got = read(stack.proxy, path, len(sent))
    decoded = [
        (
            None if r["key"] is None else base64.b64decode(r["key"]),
            None if r["value"] is None else base64.b64decode(r["value"]),
        )
        for r in got
    ]
    assert decoded == sent
    assert [(r["topic"], r["partition"], r["offset"]) for r in got] == [(name, 0, n) for n in range(4)]


def test_the_json_format_gives_json_and_stops_before_a_record_that_is_not(stack):
    name = topic(stack, "documents")
    values = [{"id": 1, "tags": ["a", "b"]}, [1, 2.5, None], "text", 42, None]
    produce(stack, name, [(b'"key"', None if v is None else json.dumps(v).encode(), 0) for v in values])
    produce(stack, name, [(None, b"not json", 0), (None, b"NaN", 0)])
    path = create(stack.proxy, "documents-readers", format="json")
    assert post(stack.proxy, f"{path}/subscription", {"topic_pattern": "documents"})[0] == 204
    got = read(stack.proxy, path, len(values), "json")
    assert [r["value"] for r in got] == values and {r["key"] for r in got} == {"key"}
    status, error = call(
        stack.proxy, "GET", f"{path}/records", headers={"Accept": "application/vnd.kafka.json.v2+json"}
    )
    assert status == 422 and error["error_code"] == 42206 and f"{name}-0@5" in error["message"]
    assert (
        post(stack.proxy, f"{path}/positions", {"offsets": [{"topic": name, "partition": 0, "offset": 6}]})[0]
        == 204
    )
    assert [r["value"] for r in read(stack.proxy, path, 1, "json")] == ["NaN"]  # as Jackson writes it
    assert call(stack.proxy, "GET", f"{path}/subscription") == (200, {"topics": [name]})


def test_the_avro_format_decodes_what_confluents_serializer_wrote(stack):
    name = topic(stack, "avro-orders")
    schema = json.dumps(
        {
            "type": "record",
            "name": "Order",
            "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
        }
    )
    serialize = AvroSerializer(SchemaRegistryClient({"url": stack.registry}), schema)
    orders = [{"id": n, "item": f"item-{n}"} for n in range(3)]
    context = SerializationContext(name, MessageField.VALUE)
    produce(stack, name, [(None, serialize(order, context), 0) for order in orders])
    path = create(stack.proxy, "avro-readers", format="avro")
    assert post(stack.proxy, f"{path}/subscription", {"topics": [name]})[0] == 204
    assert [r["value"] for r in read(stack.proxy, path, 3, "avro")] == orders


def test_positions_and_assignments(stack):
    name = topic(stack, "positions", 2)
    produce(stack, name, [(None, b"%d" % n, n % 2) for n in range(20)])
    path = create(stack.proxy, "seekers", **{"fetch.min.bytes": 1, "auto.commit.enable": False})
    both = [{"topic": name, "partition": 0}, {"topic": name, "partition": 1}]
    assert post(stack.proxy, f"{path}/assignments", {"partitions": both + both[:1]}) == (
        204,
        "",
    )  # twice: once
    assert call(stack.proxy, "GET", f"{path}/assignments") == (200, {"partitions": both})
    read(stack.proxy, path, 20)
    assert (
        post(stack.proxy, f"{path}/positions", {"offsets": [{"topic": name, "partition": 0, "offset": 7}]})[0]
        == 204
    )
    assert [(r["partition"], r["offset"]) for r in read(stack.proxy, path, 3)] == [(0, 7), (0, 8), (0, 9)]
    assert post(stack.proxy, f"{path}/positions/beginning", {"partitions": both[1:]})[0] == 204
    assert [r["offset"] for r in read(stack.proxy, path, 10)] == list(range(10))
    assert post(stack.proxy, f"{path}/positions/end", {"partitions": both})[0] == 204
    assert records(stack.proxy, path, query="?timeout=300") == []
    commit = {
        "offsets": [
            {"topic": name, "partition": 0, "offset": 4, "metadata": "checkpoint"},
            {"topic": name, "partition": 1, "offset": 2},
        ]
    }
    assert post(stack.proxy, f"{path}/offsets", commit) == (200, [])
    assert call(stack.proxy, "GET", f"{path}/offsets", {"partitions": both}, V2) == (
        200,
        {  # offset + 1, as Confluent's proxy commits
            "offsets": [
                {"topic": name, "partition": 0, "offset": 5, "metadata": "checkpoint"},
                {"topic": name, "partition": 1, "offset": 3, "metadata": ""},
            ]
        },
    )


def test_max_bytes_splits_a_fetch_without_losing_or_repeating_records(stack):
    name = topic(stack, "sized")
    produce(stack, name, [(None, b"x" * 100, 0) for _ in range(20)])
    path = create(stack.proxy, "sized-readers")
    assert (
        post(stack.proxy, f"{path}/assignments", {"partitions": [{"topic": name, "partition": 0}]})[0] == 204
    )
    got = read(stack.proxy, path, 20, query="?max_bytes=250&timeout=500")
    assert [r["offset"] for r in got] == list(range(20))
    assert (
        post(stack.proxy, f"{path}/positions/beginning", {"partitions": [{"topic": name, "partition": 0}]})[0]
        == 204
    )
    first = read(stack.proxy, path, 1, query="?max_bytes=10")  # larger than max_bytes, yet not stuck
    assert first[0]["offset"] == 0


def test_an_idle_instance_expires_and_leaves_its_group_at_once(stack):
    name = topic(stack, "idle", 2)
    path = create(stack.expiring, "idlers")
    assert post(stack.expiring, f"{path}/subscription", {"topics": [name]})[0] == 204
    wait_until(
        lambda: (
            records(stack.expiring, path, query="?timeout=200") == []
            and call(stack.expiring, "GET", f"{path}/assignments")[1]["partitions"]
        ),
        20,
        "the instance's partitions",
    )
    last_used = time.monotonic()
    assert members(stack, "idlers") == 1
    wait_until(lambda: members(stack, "idlers") == 0, 20, "the expired instance to leave its group")
    assert time.monotonic() - last_used < 10  # far below the 45 s session timeout: it left the group
    assert call(stack.expiring, "GET", f"{path}/assignments")[1]["error_code"] == 40403


def test_a_deleted_instance_leaves_its_group_at_once(stack):
    name = topic(stack, "deleted")
    path = create(stack.proxy, "deleters", **{"fetch.min.bytes": 0})
    assert post(stack.proxy, f"{path}/subscription", {"topics": [name]})[0] == 204
    wait_until(
        lambda: (
            call(stack.proxy, "GET", f"{path}/records?timeout=200")[0] == 200 and members(stack, "deleters")
        ),
        20,
        "a member",
    )
    assert call(stack.proxy, "DELETE", path) == (204, "")
    wait_until(lambda: members(stack, "deleters") == 0, 5, "the deleted instance to leave its group")
    assert call(stack.proxy, "DELETE", path)[1]["error_code"] == 40403


def test_confluents_error_codes(stack):
    name = topic(stack, "errors", 2)
    path = create(stack.proxy, "errors", name="only")
    assert post(stack.proxy, "/consumers/errors", {"name": "only"})[1]["error_code"] == 40902
    for method, suffix in (("GET", "/records"), ("POST", "/subscription"), ("DELETE", "")):
        status, body = call(
            stack.proxy, method, f"/consumers/errors/instances/nobody{suffix}", {"topics": [name]}, V2
        )
        assert (status, body["error_code"]) == (404, 40403)
    status, body = call(
        stack.proxy, "GET", f"{path}/records", headers={"Accept": "application/vnd.kafka.json.v2+json"}
    )
    assert (status, body["error_code"]) == (406, 40601)
    assert post(stack.proxy, "/consumers/errors", {"format": "xml"})[1]["error_code"] == 42204
    assert (
        post(stack.proxy, "/consumers/errors", {"auto.offset.reset": "sometimes"})[1]["error_code"] == 42204
    )
    assert (
        call(stack.expiring, "POST", "/consumers/errors", {"format": "avro"}, V2)[1]["error_code"] == 42204
    )  # no registry
    assert (
        call(stack.proxy, "GET", f"{path}/records")[1]["error_code"] == 40903
    )  # neither subscribed nor assigned
    assert (
        post(stack.proxy, f"{path}/assignments", {"partitions": [{"topic": name, "partition": 0}]})[0] == 204
    )
    assert post(stack.proxy, f"{path}/subscription", {"topics": [name]})[1]["error_code"] == 40903
    seek = {"offsets": [{"topic": name, "partition": 1, "offset": 0}]}
    assert post(stack.proxy, f"{path}/positions", seek)[1]["error_code"] == 40903  # not assigned
    assert call(stack.proxy, "GET", f"{path}/offsets")[1]["error_code"] == 40402  # no partitions named


def test_the_number_of_instances_is_bounded(stack):
    instances = ConsumerInstances(Clients(stack.bootstrap, {}), None, Settings(), max_instances=2)
    try:
        for n in range(2):
            instances.create("bounded", InstanceConfig(name=f"i{n}"), None)
        with pytest.raises(RestError) as refused:
            instances.create("bounded", InstanceConfig(name="i2"), None)
        assert (refused.value.http_status, refused.value.error_code) == (429, 42901)
        instances.delete("bounded", "i0", None)
        assert instances.create("bounded", InstanceConfig(name="i2"), None) == "i2"
    finally:
        instances.close()
