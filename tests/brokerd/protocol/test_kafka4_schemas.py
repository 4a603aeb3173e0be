"""The Kafka 4 group APIs kafka-python has no schemas for decode as librdkafka writes them.

Requests are written byte by byte the way librdkafka 2.16 builds them (flexible header v2,
compact strings and arrays, empty tag buffers), so a wrong field order or type in one of the
JSON schemas shows up here rather than as a confused client. Responses are encoded through
the codec and decoded back.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from kafka.protocol.api_key import ApiKey

from brokerd.protocol.codec import MESSAGES, RequestHeader, decode_response, encode_response

pytestmark = pytest.mark.unit

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")


class Writer:
    """Kafka's flexible-version primitives, written out by hand."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def uvarint(self, value: int) -> Writer:
        while value >= 0x80:
            self.buf.append((value & 0x7F) | 0x80)
            value >>= 7
        self.buf.append(value)
        return self

    def i8(self, value: int) -> Writer:
        self.buf += struct.pack(">b", value)
        return self

    def i16(self, value: int) -> Writer:
        self.buf += struct.pack(">h", value)
        return self

    def i32(self, value: int) -> Writer:
        self.buf += struct.pack(">i", value)
        return self

    def i64(self, value: int) -> Writer:
        self.buf += struct.pack(">q", value)
        return self

    def boolean(self, value: bool) -> Writer:
        self.buf.append(1 if value else 0)
        return self

    def uuid(self, value: uuid.UUID) -> Writer:
        self.buf += value.bytes
        return self

    def cstr(self, value: str | None) -> Writer:
        if value is None:
            return self.uvarint(0)
        raw = value.encode()
        self.uvarint(len(raw) + 1)
        self.buf += raw
        return self

    def carray(self, count: int | None) -> Writer:
        return self.uvarint(0 if count is None else count + 1)

    def tags(self) -> Writer:
        return self.uvarint(0)


def request_frame(api_key: int, version: int, body: Writer) -> bytes:
    """A request header v2 (client id as a classic nullable string, then tags) and the body."""
    head = Writer().i16(api_key).i16(version).i32(7)
    client_id = b"rdkafka"
    head.i16(len(client_id))
    head.buf += client_id
    head.tags()
    return bytes(head.buf + body.buf)


def decode(api_key: int, version: int, body: Writer) -> Any:
    request_class = MESSAGES[api_key][0]
    decoded = request_class.decode(request_frame(api_key, version, body), version=version, header=True)
    assert decoded.header.correlation_id == 7
    assert decoded.header.client_id == "rdkafka"
    return decoded


def ack_batch(w: Writer) -> Writer:
    return w.carray(1).i64(10).i64(12).carray(3).i8(1).i8(2).i8(0).tags()


def round_trip(api_key: int, version: int, fields: dict[str, Any]) -> Any:
    header = RequestHeader(api_key, version, 99)
    framed = encode_response(header, fields)
    return decode_response(header, bytes(framed[4:]))


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_heartbeat_request_as_librdkafka_writes_it(version: int) -> None:
    w = Writer().cstr("g1").cstr("m-1").i32(3).cstr(None).cstr("rack-a").i32(300000)
    w.carray(2).cstr("t2").cstr("t1")
    if version >= 1:
        w.cstr("^orders-.*")
    w.cstr("uniform")
    w.carray(1).uuid(TOPIC_ID).carray(2).i32(0).i32(4).tags()
    w.tags()
    req = decode(ApiKey.ConsumerGroupHeartbeat, version, w)
    assert (req.group_id, req.member_id, req.member_epoch) == ("g1", "m-1", 3)
    assert req.instance_id is None and req.rack_id == "rack-a"
    assert req.rebalance_timeout_ms == 300000
    assert list(req.subscribed_topic_names) == ["t2", "t1"]
    if version >= 1:
        assert req.subscribed_topic_regex == "^orders-.*"
    assert req.server_assignor == "uniform"
    assert req.topic_partitions[0].topic_id == TOPIC_ID
    assert list(req.topic_partitions[0].partitions) == [0, 4]


def test_consumer_group_heartbeat_request_unchanged_fields_are_null() -> None:
    w = Writer().cstr("g1").cstr("m-1").i32(5).cstr(None).cstr(None).i32(-1)
    w.carray(None).cstr(None).cstr(None).carray(None).tags()
    req = decode(ApiKey.ConsumerGroupHeartbeat, 1, w)
    assert req.subscribed_topic_names is None
    assert req.subscribed_topic_regex is None
    assert req.server_assignor is None
    assert req.topic_partitions is None


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_heartbeat_response_round_trips(version: int) -> None:
    resp = round_trip(
        ApiKey.ConsumerGroupHeartbeat,
        version,
        {
            "error_code": 0,
            "member_id": "m-1",
            "member_epoch": 4,
            "heartbeat_interval_ms": 5000,
            "assignment": {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [1, 2]}]},
        },
    )
    assert resp.member_epoch == 4 and resp.heartbeat_interval_ms == 5000
    assert list(resp.assignment.topic_partitions[0].partitions) == [1, 2]
    unchanged = round_trip(ApiKey.ConsumerGroupHeartbeat, version, {"member_epoch": 4, "assignment": None})
    assert unchanged.assignment is None


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_describe_round_trips(version: int) -> None:
    w = Writer().carray(2).cstr("g1").cstr("g2").boolean(True).tags()
    req = decode(ApiKey.ConsumerGroupDescribe, version, w)
    assert list(req.group_ids) == ["g1", "g2"] and req.include_authorized_operations
    assignment = {"topic_partitions": [{"topic_id": TOPIC_ID, "topic_name": "t1", "partitions": [0]}]}
    member: dict[str, Any] = {
        "member_id": "m-1",
        "member_epoch": 3,
        "client_id": "c",
        "client_host": "/127.0.0.1",
        "subscribed_topic_names": ["t1"],
        "assignment": assignment,
        "target_assignment": assignment,
    }
    if version >= 1:
        member["member_type"] = 1
    resp = round_trip(
        ApiKey.ConsumerGroupDescribe,
        version,
        {"groups": [{"group_id": "g1", "group_state": "Stable", "group_epoch": 3, "members": [member]}]},
    )
    described = resp.groups[0].members[0]
    assert described.assignment.topic_partitions[0].topic_name == "t1"
    assert described.target_assignment.topic_partitions[0].topic_id == TOPIC_ID


def test_share_group_heartbeat_round_trips() -> None:
    w = Writer().cstr("sg").cstr("m-1").i32(0).cstr(None).carray(1).cstr("t1").tags()
    req = decode(ApiKey.ShareGroupHeartbeat, 1, w)
    assert (req.group_id, req.member_id, req.member_epoch) == ("sg", "m-1", 0)
    assert list(req.subscribed_topic_names) == ["t1"]
    resp = round_trip(
        ApiKey.ShareGroupHeartbeat,
        1,
        {
            "member_id": "m-1",
            "member_epoch": 1,
            "heartbeat_interval_ms": 5000,
            "assignment": {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0]}]},
        },
    )
    assert resp.assignment.topic_partitions[0].topic_id == TOPIC_ID


def test_share_group_describe_round_trips() -> None:
    req = decode(ApiKey.ShareGroupDescribe, 1, Writer().carray(1).cstr("sg").boolean(False).tags())
    assert list(req.group_ids) == ["sg"]
    resp = round_trip(
        ApiKey.ShareGroupDescribe,
        1,
        {
            "groups": [
                {
                    "group_id": "sg",
                    "group_state": "Stable",
                    "members": [
                        {
                            "member_id": "m-1",
                            "client_id": "c",
                            "client_host": "/h",
                            "subscribed_topic_names": ["t1"],
                            "assignment": {"topic_partitions": []},
                        }
                    ],
                }
            ]
        },
    )
    assert resp.groups[0].members[0].member_id == "m-1"


def test_share_fetch_round_trips() -> None:
    w = Writer().cstr("sg").cstr("m-1").i32(1).i32(500).i32(1).i32(52428800).i32(500).i32(500)
    w.carray(1).uuid(TOPIC_ID).carray(1).i32(0)
    ack_batch(w).tags().tags()
    w.carray(1).uuid(TOPIC_ID).carray(1).i32(3).tags()
    w.tags()
    req = decode(ApiKey.ShareFetch, 1, w)
    assert (req.share_session_epoch, req.max_records, req.batch_size) == (1, 500, 500)
    batch = req.topics[0].partitions[0].acknowledgement_batches[0]
    assert (batch.first_offset, batch.last_offset, list(batch.acknowledge_types)) == (10, 12, [1, 2, 0])
    assert list(req.forgotten_topics_data[0].partitions) == [3]
    resp = round_trip(
        ApiKey.ShareFetch,
        1,
        {
            "acquisition_lock_timeout_ms": 30000,
            "responses": [
                {
                    "topic_id": TOPIC_ID,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "current_leader": {"leader_id": 1, "leader_epoch": 0},
                            "records": b"\x00" * 8,
                            "acquired_records": [{"first_offset": 0, "last_offset": 4, "delivery_count": 1}],
                        }
                    ],
                }
            ],
            "node_endpoints": [{"node_id": 1, "host": "localhost", "port": 9092}],
        },
    )
    partition = resp.responses[0].partitions[0]
    assert partition.acquired_records[0].last_offset == 4
    assert bytes(partition.records) == b"\x00" * 8
    assert resp.node_endpoints[0].port == 9092


def test_share_acknowledge_round_trips() -> None:
    w = Writer().cstr("sg").cstr("m-1").i32(2)
    w.carray(1).uuid(TOPIC_ID).carray(1).i32(0)
    ack_batch(w).tags().tags()
    w.tags()
    req = decode(ApiKey.ShareAcknowledge, 1, w)
    assert req.topics[0].partitions[0].acknowledgement_batches[0].first_offset == 10
    resp = round_trip(
        ApiKey.ShareAcknowledge,
        1,
        {
            "responses": [
                {
                    "topic_id": TOPIC_ID,
                    "partitions": [
                        {"partition_index": 0, "current_leader": {"leader_id": 1, "leader_epoch": 2}}
                    ],
                }
            ]
        },
    )
    assert resp.responses[0].partitions[0].current_leader.leader_epoch == 2


def test_share_group_offsets_apis_round_trip() -> None:
    w = Writer().carray(1).cstr("sg").carray(1).cstr("t1").carray(1).i32(0).tags().tags().tags()
    req = decode(ApiKey.DescribeShareGroupOffsets, 0, w)
    assert req.groups[0].topics[0].topic_name == "t1"
    described = round_trip(
        ApiKey.DescribeShareGroupOffsets,
        0,
        {
            "groups": [
                {
                    "group_id": "sg",
                    "topics": [
                        {
                            "topic_name": "t1",
                            "topic_id": TOPIC_ID,
                            "partitions": [{"partition_index": 0, "start_offset": 42, "leader_epoch": 0}],
                        }
                    ],
                }
            ]
        },
    )
    assert described.groups[0].topics[0].partitions[0].start_offset == 42

    w = Writer().cstr("sg").carray(1).cstr("t1").carray(1).i32(0).i64(5).tags().tags().tags()
    req = decode(ApiKey.AlterShareGroupOffsets, 0, w)
    assert req.topics[0].partitions[0].start_offset == 5
    altered = round_trip(
        ApiKey.AlterShareGroupOffsets,
        0,
        {"responses": [{"topic_name": "t1", "topic_id": TOPIC_ID, "partitions": [{"partition_index": 0}]}]},
    )
    assert altered.responses[0].partitions[0].error_code == 0

    req = decode(ApiKey.DeleteShareGroupOffsets, 0, Writer().cstr("sg").carray(1).cstr("t1").tags().tags())
    assert req.topics[0].topic_name == "t1"
    deleted = round_trip(
        ApiKey.DeleteShareGroupOffsets,
        0,
        {"error_code": 69, "responses": [{"topic_name": "t1", "topic_id": TOPIC_ID, "error_code": 0}]},
    )
    assert deleted.error_code == 69 and deleted.responses[0].topic_name == "t1"
