"""Recompressing a producer's batch into the topic's ``compression.type``.

Kafka's LogValidator rebuilds a batch whose codec differs from the topic's; it is the one
case where the produce path decodes records. Offsets (as deltas), timestamps, keys, values,
headers and the producer fields (id, epoch, base sequence, transactional flag) are kept, so
idempotence and transactions see the same batch; only the codec and the CRC change.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import crc32c
from kafka import codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from brokerd.storage.record_batch import (
    COMPRESSION_MASK,
    CRC_START,
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    ByteBuffer,
)

PRODUCER = "producer"
CODEC_IDS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
_AVAILABLE: dict[str, Callable[[], bool]] = {
    "uncompressed": lambda: True,
    "gzip": codec.has_gzip,
    "snappy": codec.has_snappy,
    "lz4": codec.has_lz4,
    "zstd": codec.has_zstd,
}

_ENCODERS = {1: codec.gzip_encode, 2: codec.snappy_encode, 3: codec.lz4_encode, 4: codec.zstd_encode}
# compression.gzip.level and compression.lz4.level, passed to the kafka-python encoders that
# take one (gzip's -1 is zlib's default; lz4 levels above liblz4's highest act as it)
_LEVEL_ARGUMENTS = {1: "compresslevel", 3: "compression_level"}
_LENGTH, LENGTH_POSITION = struct.Struct(">i"), 8
_CRC, CRC_POSITION = struct.Struct(">I"), 17
_ATTRIBUTES, ATTRIBUTES_POSITION = struct.Struct(">h"), 21


def codec_available(name: str) -> bool:
    """Whether this broker can write ``name`` (kafka-python needs the codec's Python module)."""
    return _AVAILABLE[name]()


def target_codec(compression_type: str, batch_codec: int) -> int | None:
    """The codec id a batch must be rewritten to, or None when it is stored as sent."""
    if compression_type == PRODUCER:
        return None
    wanted = CODEC_IDS[compression_type]
    return None if wanted == batch_codec else wanted


def recompress(batch: ByteBuffer, codec_id: int, level: int | None = None) -> bytes:
    """Rebuild a validated client batch (base offset 0) with codec ``codec_id``, at the
    topic's ``level`` for it where the codec's encoder takes one."""
    source = DefaultRecordBatch(bytes(batch))
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
