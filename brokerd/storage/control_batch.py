"""Control batches: the end-transaction markers that commit or abort a transaction.

A transaction coordinator ends a producer's transaction on a partition by
appending a control batch (attributes transactional|control) holding one
record: key = version 0 + type (ABORT 0, COMMIT 1), value = version 0 +
coordinator epoch. Such a batch is never compressed and holds exactly one
record, so its type and coordinator epoch are found by a few varint reads
at a fixed place; no other record is ever decoded by the broker.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import crc32c

from brokerd.storage.record_batch import (
    CONTROL_MASK,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TRANSACTIONAL_MASK,
    ByteBuffer,
)

ABORT = 0
COMMIT = 1
CONTROL_ATTRIBUTES = TRANSACTIONAL_MASK | CONTROL_MASK

# The one record, its varints written out: length 16, attributes 0, timestampDelta 0,
# offsetDelta 0, keyLength 4, key (version, type), valueLength 6, value (version,
# coordinator epoch), no headers. Varints are zigzag: n is written as 2n.
_MARKER_RECORD = struct.Struct(">bbbbbhhbhib")
_RECORD_LENGTH = _MARKER_RECORD.size - 1
_KEY_LENGTH, _VALUE_LENGTH = 4, 6
_TYPE = struct.Struct(">h")  # after the key's version
_COORDINATOR_EPOCH = struct.Struct(">i")  # after the value's version


class EndTxnMarker(NamedTuple):
    commit: bool
    coordinator_epoch: int


def build_end_txn_marker(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp_ms: int
) -> bytes:
    """The control batch ending ``producer_id``'s transaction, at base offset 0 with its CRC set."""
    record = _MARKER_RECORD.pack(
        2 * _RECORD_LENGTH,
        0,
        0,
        0,
        2 * _KEY_LENGTH,
        0,
        COMMIT if commit else ABORT,
        2 * _VALUE_LENGTH,
        0,
        coordinator_epoch,
        0,
    )
    size = HEADER_SIZE + len(record)
    batch = bytearray(size)
    HEADER.pack_into(
        batch,
        0,
        0,
        size - LOG_OVERHEAD,
        0,
        2,
        0,
        CONTROL_ATTRIBUTES,
        0,
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        -1,
        1,
    )
    batch[HEADER_SIZE:] = record
    struct.pack_into(">I", batch, 17, crc32c.crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def read_end_txn_marker(buf: ByteBuffer, position: int) -> EndTxnMarker | None:
    """The end-transaction marker in the control batch at ``position``; None when its record
    is of another control type or unreadable."""
    try:
        cursor = _skip_varint(buf, position + HEADER_SIZE) + 1  # length, attributes
        cursor = _skip_varint(buf, _skip_varint(buf, cursor))  # timestampDelta, offsetDelta
        key_length, cursor = _read_varint(buf, cursor)
        if key_length < _KEY_LENGTH:
            return None
        (record_type,) = _TYPE.unpack_from(buf, cursor + 2)
        value_length, cursor = _read_varint(buf, cursor + key_length)
        if record_type not in (ABORT, COMMIT) or value_length < _VALUE_LENGTH:
            return None
        (coordinator_epoch,) = _COORDINATOR_EPOCH.unpack_from(buf, cursor + 2)
        return EndTxnMarker(record_type == COMMIT, coordinator_epoch)
    except (IndexError, struct.error):
        return None


def _read_varint(buf: ByteBuffer, position: int) -> tuple[int, int]:
    """A zigzag varint at ``position``: its value and the position after it."""
    shift = raw = 0
    while True:
        byte = buf[position]
        position += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position
        shift += 7


def _skip_varint(buf: ByteBuffer, position: int) -> int:
    return _read_varint(buf, position)[1]
