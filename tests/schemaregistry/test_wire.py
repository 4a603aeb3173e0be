"""Confluent's wire format: our framing against confluent-kafka's own reader and writer."""

import io
import time

import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId

from schemaregistry.wire import BadPayload, NotFramed, frame, schema_id_of, unframe

pytestmark = pytest.mark.unit


def test_avro_and_json_framing_is_magic_then_big_endian_id() -> None:
    assert frame(258, b"data") == b"\x00\x00\x00\x01\x02data"
    assert unframe(b"\x00\x00\x00\x01\x02data") == (258, None, b"data")


@pytest.mark.parametrize(
    ("indexes", "wire"),
    [
        ([0], b"\x00"),
        ([], b"\x00"),
        ([1], b"\x02\x02"),  # the reference's example
        ([0, 2], b"\x04\x00\x04"),
        ([300], b"\x02\xd8\x04"),  # 600 zig-zagged takes two bytes
    ],
)
def test_protobuf_message_indexes_are_zigzag_varints(indexes: list[int], wire: bytes) -> None:
    payload = frame(7, b"pb", indexes)
    assert payload == b"\x00\x00\x00\x00\x07" + wire + b"pb"
    assert unframe(payload, protobuf=True) == (7, indexes or [0], b"pb")


@pytest.mark.parametrize("indexes", [[0], [1], [3, 0, 2], [200, 70000]])
def test_confluent_kafka_reads_our_framing_and_we_read_theirs(indexes: list[int]) -> None:
    ours = frame(4242, b"body", indexes)
    theirs = SchemaId("PROTOBUF")
    rest = theirs.from_bytes(io.BytesIO(ours))
    assert (theirs.id, theirs.message_indexes, rest.read()) == (4242, indexes, b"body")

    written = SchemaId("PROTOBUF", 4242, message_indexes=indexes).id_to_bytes() + b"body"
    assert written == ours
    assert unframe(written, protobuf=True) == (4242, indexes, b"body")


def test_confluent_kafka_reads_our_avro_framing() -> None:
    theirs = SchemaId("AVRO")
    rest = theirs.from_bytes(io.BytesIO(frame(9, b"avro")))
    assert (theirs.id, theirs.message_indexes, rest.read()) == (9, None, b"avro")


def test_schema_id_of_a_payload_that_is_not_framed_is_none() -> None:
    assert schema_id_of(frame(12, b"")) == 12
    assert schema_id_of(b"\x00\x00\x00\x01") is None  # too short
    assert schema_id_of(b"hello world") is None  # magic byte 'h'
    assert schema_id_of(b"\x01" + bytes(16)) is None  # 8.x GUID framing is not ours


def test_unframe_of_an_unframed_payload_raises_not_framed() -> None:
    with pytest.raises(NotFramed, match="too short"):
        unframe(b"\x00\x00")
    with pytest.raises(NotFramed, match="magic byte 0x7b"):
        unframe(b'{"a": 1}')
    assert issubclass(NotFramed, BadPayload) and issubclass(BadPayload, ValueError)


def test_frame_refuses_what_the_wire_cannot_carry() -> None:
    with pytest.raises(ValueError, match="4 unsigned bytes"):
        frame(2**32, b"")
    with pytest.raises(ValueError, match="negative"):
        frame(1, b"", [0, -1])


@pytest.mark.parametrize(
    ("indexes", "error"),
    [
        (b"", "ends inside"),
        (b"\x04\x02", "count 2 with 1 bytes left"),
        (b"\x04\x02\x80", "ends inside"),  # count 2, the second index cut short
        (b"\xff\xff\xff\xff\x0f", "count -2147483648"),
        (b"\xfe\xff\xff\xff\x0f", "count 2147483647"),  # a huge count, 0 bytes left
        (b"\x80\x80\x80\x80\x80\x01", "longer than 5 bytes"),
        (b"\x02\x01", "negative message index -1"),
    ],
)
def test_hostile_message_indexes_fail_fast_without_allocating(indexes: bytes, error: str) -> None:
    started = time.monotonic()
    with pytest.raises(BadPayload, match=error):
        unframe(b"\x00\x00\x00\x00\x01" + indexes, protobuf=True)
    assert time.monotonic() - started < 0.1


def test_a_large_hostile_payload_is_read_in_time_proportional_to_its_size() -> None:
    # a count as large as the bytes that follow, each a maximal 5-byte varint: the reader
    # stops at the first index that runs off the end instead of trusting the count
    payload = b"\x00\x00\x00\x00\x01" + b"\xfe\xff\x7f" + b"\xff" * 1_000_000
    started = time.monotonic()
    with pytest.raises(BadPayload):
        unframe(payload, protobuf=True)
    assert time.monotonic() - started < 1
