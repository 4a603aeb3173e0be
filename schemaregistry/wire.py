"""Confluent's wire format: how a record's key or value names the schema it was written with.

A framed payload is the magic byte 0x00, the schema id as 4 big-endian bytes, then for
Protobuf the message indexes (which message of the schema's file, as a path through nested
messages), then the data. The indexes are zig-zag varints, a count and then the indexes, as
Kafka's `ByteUtils.writeVarint` writes them; `[0]`, the first top-level message and by far the
most common, is the single byte 0x00 (a count of 0 reads back as `[0]`).

Records come from topics anyone may write, so reading is strict and bounded: a varint longer
than an int32's five bytes, a negative count or index, or a count larger than the bytes left
is a `BadPayload`, never a long loop or a large allocation.
"""

import struct
from collections.abc import Sequence

MAGIC = 0
HEADER_SIZE = 5  # magic byte + 4-byte schema id
_HEADER = struct.Struct(">bI")
_MAX_VARINT_BYTES = 5  # Kafka's readVarint reads an int32: at most 5 bytes of 7 bits


class BadPayload(ValueError):
    """A payload that does not hold what it claims: truncated, corrupt or hostile framing or data."""


class NotFramed(BadPayload):
    """A payload without Confluent's framing (too short, or a magic byte other than 0x00).

    A subclass of BadPayload so that callers who only care whether a payload decodes catch one
    class; callers that show unframed payloads raw catch this one first."""


def frame(schema_id: int, body: bytes, message_indexes: Sequence[int] | None = None) -> bytes:
    """Prefix `body` with the magic byte, `schema_id` and, for Protobuf, `message_indexes`.

    `message_indexes` is None for Avro and JSON Schema, which have none on the wire. For
    Protobuf, `[0]` and `[]` are both written as the single byte 0x00, as Confluent's
    serializers write `[0]`."""
    if not 0 <= schema_id <= 0xFFFFFFFF:
        raise ValueError(f"schema id {schema_id} does not fit in 4 unsigned bytes")
    header = _HEADER.pack(MAGIC, schema_id)
    if message_indexes is None:
        return header + body
    return header + _encode_indexes(message_indexes) + body


def unframe(payload: bytes, protobuf: bool = False) -> tuple[int, list[int] | None, bytes]:
    """Split a framed payload into (schema id, message indexes, data).

    The message indexes are read only when `protobuf` is true (the payload itself does not say
    which format it holds); otherwise they are None."""
    schema_id = _schema_id(payload)
    if not protobuf:
        return schema_id, None, payload[HEADER_SIZE:]
    indexes, offset = _decode_indexes(payload, HEADER_SIZE)
    return schema_id, indexes, payload[offset:]


def schema_id_of(payload: bytes) -> int | None:
    """The schema id of a framed payload, or None when the payload is not Confluent-framed."""
    try:
        return _schema_id(payload)
    except NotFramed:
        return None


def _schema_id(payload: bytes) -> int:
    if len(payload) < HEADER_SIZE:
        raise NotFramed(f"{len(payload)} bytes: too short for a magic byte and a schema id")
    magic, schema_id = _HEADER.unpack_from(payload)
    if magic != MAGIC:
        raise NotFramed(f"magic byte {payload[0]:#04x}, not 0x00")
    return int(schema_id)


def _encode_indexes(indexes: Sequence[int]) -> bytes:
    if any(index < 0 for index in indexes):
        raise ValueError(f"message indexes must not be negative: {list(indexes)}")
    if list(indexes) in ([], [0]):
        return b"\x00"
    return b"".join(_zigzag_varint(n) for n in (len(indexes), *indexes))


def _zigzag_varint(n: int) -> bytes:
    """Kafka's ByteUtils.writeVarint for a non-negative int: zig-zag, then 7 bits a byte."""
    value = n << 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _decode_indexes(payload: bytes, offset: int) -> tuple[list[int], int]:
    count, offset = _read_zigzag_varint(payload, offset)
    if count == 0:
        return [0], offset
    # every index takes at least one byte: a larger count cannot be honest, and checking it
    # first bounds the loop and the list by the payload's own size
    if count < 0 or count > len(payload) - offset:
        raise BadPayload(f"message index count {count} with {len(payload) - offset} bytes left")
    indexes = []
    for _ in range(count):
        index, offset = _read_zigzag_varint(payload, offset)
        if index < 0:
            raise BadPayload(f"negative message index {index}")
        indexes.append(index)
    return indexes, offset


def _read_zigzag_varint(payload: bytes, offset: int) -> tuple[int, int]:
    raw = 0
    for shift in range(0, 7 * _MAX_VARINT_BYTES, 7):
        if offset >= len(payload):
            raise BadPayload("payload ends inside the message indexes")
        byte = payload[offset]
        offset += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), offset
    raise BadPayload(f"message index varint longer than {_MAX_VARINT_BYTES} bytes")
