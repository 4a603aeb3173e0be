"""A produced batch is decompressed (for a compacted topic's key check, or to recompress it
to the topic's codec) only up to MAX_DECOMPRESSED_BYTES: a batch of a few kilobytes that
would expand to a gibibyte of zeros is refused as INVALID_RECORD without the broker
allocating it."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import crc32c
import lz4.frame
import pytest
import zstandard
from kafka.errors import InvalidRecordError

from brokerd.storage.recompression import MAX_DECOMPRESSED_BYTES
from tests.brokerd.storage.conftest import GZIP, LZ4, make_batch

pytestmark = pytest.mark.unit

ZSTD = 4
MIB = 1 << 20
ZEROS = bytes(MIB)


def _gzip(mib: int) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(compressor.compress(ZEROS) for _ in range(mib)) + compressor.flush()


def _zstd(mib: int) -> bytes:
    compressor = zstandard.ZstdCompressor().compressobj()
    return b"".join(compressor.compress(ZEROS) for _ in range(mib)) + compressor.flush()


def _lz4(mib: int) -> bytes:
    compressor = lz4.frame.LZ4FrameCompressor()
    return compressor.begin() + b"".join(compressor.compress(ZEROS) for _ in range(mib)) + compressor.flush()


def bomb(codec_id: int, compressed: bytes) -> bytes:
    """A one-record batch, its CRC right, whose records are ``compressed``."""
    batch = bytearray(make_batch(1)[:61]) + compressed
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, 21, struct.unpack_from(">h", batch, 21)[0] | codec_id)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


BOMBS = {"gzip": (GZIP, _gzip, 256), "zstd": (ZSTD, _zstd, 1024), "lz4": (LZ4, _lz4, 200)}


@pytest.mark.parametrize("codec", list(BOMBS))
@pytest.mark.parametrize(
    "configs",
    [{"cleanup.policy": "compact"}, {"compression.type": "uncompressed"}],
    ids=["compacted", "recompressed"],
)
def test_a_decompression_bomb_is_refused_without_expanding_it(open_log, codec, configs):
    codec_id, compress, mib = BOMBS[codec]
    batch = bomb(codec_id, compress(mib))
    log = open_log({**configs, "max.message.bytes": str(len(batch) + 1)})
    tracemalloc.start()
    try:
        with pytest.raises(InvalidRecordError, match=f"more than {MAX_DECOMPRESSED_BYTES} bytes"):
            log.append_as_leader(batch, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_DECOMPRESSED_BYTES  # the limit and a decompressor's buffers, not 1 GiB
    assert log.log_end_offset == 0
