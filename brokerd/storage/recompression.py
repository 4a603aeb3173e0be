"""Recompressing a producer's batch into the topic's ``compression.type``.

Kafka's LogValidator rebuilds a batch whose codec differs from the topic's; with a compacted
topic's key check, it is one of the two cases where the produce path decodes records. Both
decode through records_of, which decompresses within MAX_DECOMPRESSED_BYTES: kafka-python
decompresses a batch whole and unbounded, so a 1 MB zstd or gzip batch of zeros would expand
to gigabytes in the broker (snappy cannot expand more than ~21 times, so max.message.bytes
bounds it already). Offsets (as deltas), timestamps, keys, values,
headers and the producer fields (id, epoch, base sequence, transactional flag) are kept, so
idempotence and transactions see the same batch; only the codec and the CRC change.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable

import crc32c
from kafka import codec
from kafka.errors import InvalidRecordError
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from brokerd.storage.compression_codecs import CODEC_IDS, PRODUCER
from brokerd.storage.record_batch import (
    COMPRESSION_MASK,
    CRC_START,
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    ByteBuffer,
)

_ENCODERS = {1: codec.gzip_encode, 2: codec.snappy_encode, 3: codec.lz4_encode, 4: codec.zstd_encode}
# compression.gzip.level and compression.lz4.level, passed to the kafka-python encoders that
# take one (gzip's -1 is zlib's default; lz4 levels above liblz4's highest act as it)
_LEVEL_ARGUMENTS = {1: "compresslevel", 3: "compression_level"}
_LENGTH, LENGTH_POSITION = struct.Struct(">i"), 8
_CRC, CRC_POSITION = struct.Struct(">I"), 17
_ATTRIBUTES, ATTRIBUTES_POSITION = struct.Struct(">h"), 21


MAX_DECOMPRESSED_BYTES = 32 * 1024 * 1024


def _gunzip(data: bytes, limit: int) -> bytes:
    """Every gzip member in ``data``, but no more than ``limit`` + 1 bytes of them."""
    members: list[bytes] = []
    size = 0
    while data and size <= limit:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        members.append(member.decompress(data, limit + 1 - size))
        size += len(members[-1])
        if not member.eof:
            break
        data = member.unused_data
    return members[0] if len(members) == 1 else b"".join(members)


def _unlz4(data: bytes, limit: int) -> bytes:
    import lz4.frame  # only lz4 batches need it

    records: bytes = lz4.frame.LZ4FrameDecompressor().decompress(data, max_length=limit + 1)
    return records


def _unzstd(data: bytes, limit: int) -> bytes:
    import zstandard  # only zstd batches need it

    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        return reader.read(limit + 1)


_DECODERS: dict[int, Callable[[bytes, int], bytes | bytearray]] = {
    1: _gunzip,
    2: lambda data, limit: codec.snappy_decode(data),
    3: _unlz4,
    4: _unzstd,
}


def records_of(batch: ByteBuffer, limit: int = MAX_DECOMPRESSED_BYTES) -> DefaultRecordBatch:
    """A validated client batch as kafka-python's DefaultRecordBatch over its decompressed
    records; InvalidRecordError when they come to more than ``limit`` bytes."""
    data = bytes(batch)
    attributes = _ATTRIBUTES.unpack_from(data, ATTRIBUTES_POSITION)[0]
    codec_id = attributes & COMPRESSION_MASK
    if codec_id == 0:
        return DefaultRecordBatch(data)
    records = _DECODERS[codec_id](data[HEADER_SIZE:], limit)
    if len(records) > limit:
        raise InvalidRecordError(f"Record batch decompresses to more than {limit} bytes")
    plain = bytearray(data[:HEADER_SIZE]) + records
    _ATTRIBUTES.pack_into(plain, ATTRIBUTES_POSITION, attributes & ~COMPRESSION_MASK)
    _LENGTH.pack_into(plain, LENGTH_POSITION, len(plain) - LOG_OVERHEAD)
    return DefaultRecordBatch(plain)


def target_codec(compression_type: str, batch_codec: int) -> int | None:
    """The codec id a batch must be rewritten to, or None when it is stored as sent."""
    if compression_type == PRODUCER:
        return None
    wanted = CODEC_IDS[compression_type]
    return None if wanted == batch_codec else wanted


def recompress(batch: ByteBuffer, codec_id: int, level: int | None = None) -> bytes:
    """Rebuild a validated client batch (base offset 0) with codec ``codec_id``, at the
    topic's ``level`` for it where the codec's encoder takes one."""
    source = records_of(batch)
    builder = DefaultRecordBatchBuilder(
        magic=CURRENT_MAGIC,
        compression_type=0,
        is_transactional=source.is_transactional,
        producer_id=source.producer_id,
        producer_epoch=source.producer_epoch,
        base_sequence=source.base_sequence,
        batch_size=2**31 - 1,
    )
    for record in source:
        builder.append(
            record.offset,
            timestamp=record.timestamp,
            key=record.key,
            value=record.value,
            headers=record.headers,
        )
    plain = bytes(builder.build())
    return plain if codec_id == 0 else _compressed(plain, codec_id, level)


def _compressed(plain: bytes, codec_id: int, level: int | None) -> bytes:
    """Compress the records of an uncompressed batch. Done here rather than by kafka-python's
    builder, which falls back to no compression when it saves nothing: the topic's codec is
    a promise to consumers, as in Kafka."""
    argument = _LEVEL_ARGUMENTS.get(codec_id)
    options = {argument: level} if argument and level is not None else {}
    records = _ENCODERS[codec_id](plain[HEADER_SIZE:], **options)
    batch = bytearray(plain[:HEADER_SIZE]) + records
    attributes = _ATTRIBUTES.unpack_from(batch, ATTRIBUTES_POSITION)[0]
    _ATTRIBUTES.pack_into(batch, ATTRIBUTES_POSITION, (attributes & ~COMPRESSION_MASK) | codec_id)
    _LENGTH.pack_into(batch, LENGTH_POSITION, len(batch) - LOG_OVERHEAD)
    _CRC.pack_into(batch, CRC_POSITION, crc32c.crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)
