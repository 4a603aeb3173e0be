"""What the group and transaction coordinators share about their internal topics: which
partition a key hashes to, Kafka's int16-length strings, building the record batches they
append, and reading a whole partition back when they become its leader."""

from __future__ import annotations

import struct
import time
from collections.abc import Container, Iterator, Sequence

from kafka.errors import NotCoordinatorError
from kafka.record.default_records import DefaultRecordBatchBuilder

from brokerd.ports import MetadataView, ReplicaLog
from brokerd.storage.record_batch import iter_batch_spans

READ_CHUNK_BYTES = 4 * 1024 * 1024
NO_PRODUCER_ID = -1


def partition_for(key: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % partitions``, with Java's String.hashCode, so a
    group or transactional id lands on the same partition number as on Apache Kafka.
    Utils.abs is Math.abs, except that Integer.MIN_VALUE becomes 0."""
    h = 0
    for (unit,) in struct.iter_unpack(">H", key.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    return (abs(signed) if signed != -(1 << 31) else 0) % num_partitions


class InternalTopicCoordinator:
    """A coordinator of ids (groups, transactional ids) hashed onto the partitions of an
    internal topic: it coordinates the ids of the partitions it leads and has loaded."""

    topic: str
    loaded: Container[int]

    def __init__(self, broker_id: int, num_partitions: int, metadata: MetadataView) -> None:
        self.broker_id = broker_id
        self.num_partitions = num_partitions
        self.metadata = metadata

    def partition_of(self, key: str) -> int:
        return partition_for(key, self.num_partitions)

    def require_loaded(self, key: str) -> int:
        """The partition of ``key``; NOT_COORDINATOR unless this broker has loaded it."""
        partition = self.partition_of(key)
        if partition not in self.loaded:
            self.metadata.refresh()  # a client may know of a leader change before us
        if partition not in self.loaded:
            raise NotCoordinatorError(
                f"broker {self.broker_id} does not coordinate {key!r} ({self.topic}-{partition})"
            )
        return partition


def write_string(value: str | None) -> bytes:
    """An int16-length string; None is written as the null string (length -1)."""
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def read_nullable_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    """A nullable int16-length string at ``pos``; returns it (None if null) and the end."""
    (length,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if length < 0:
        return None, pos
    return buf[pos : pos + length].decode(), pos + length


def read_string(buf: bytes, pos: int) -> tuple[str, int]:
    """A nullable int16-length string at ``pos`` (null reads as ""); returns it and the end."""
    value, pos = read_nullable_string(buf, pos)
    return value or "", pos


def write_bytes(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def read_bytes(buf: bytes, pos: int) -> tuple[bytes, int]:
    """An int32-length byte string at ``pos`` (null reads as b""); returns it and the end."""
    (length,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    if length < 0:
        return b"", pos
    return bytes(buf[pos : pos + length]), pos + length


def build_batch(
    entries: Sequence[tuple[bytes, bytes | None]],
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """One record batch of (key, value) records; a None value is a tombstone. With a
    producer id the batch is transactional: it belongs to that producer's open transaction."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=int(producer_id != NO_PRODUCER_ID),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=2**31 - 1,
    )
    now = int(time.time() * 1000)
    for offset, (key, value) in enumerate(entries):
        builder.append(offset, timestamp=now, key=key, value=value, headers=[])
    return bytes(builder.build())


def read_whole_log(log: ReplicaLog) -> Iterator[bytes]:
    """The partition log from its start to its end, in chunks of whole batches; a new leader
    of an internal topic rebuilds its cache from this."""
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = bytes(log.read(offset, READ_CHUNK_BYTES))
        if not chunk:
            return
        yield chunk
        previous, offset = offset, _next_offset(chunk)
        if offset <= previous:
            return


def _next_offset(chunk: bytes) -> int:
    """The offset after the last whole batch of a read."""
    last = -1
    for span in iter_batch_spans(chunk, 0, len(chunk)):
        last = span[2]
    return last + 1
