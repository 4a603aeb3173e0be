"""compression.type other than producer: the leader rewrites batches in the topic's codec."""

import pytest
from kafka.errors import InvalidConfigurationError

from brokerd.storage.log_config import LogConfig
from tests.brokerd.storage.conftest import GZIP, LZ4, NONE, make_batch, records

pytestmark = pytest.mark.unit


def stored_codecs(log) -> list[int]:
    return [header.compression_type for segment in log.segments for _, header in segment.batch_headers()]


def test_an_lz4_batch_is_stored_gzip_with_the_same_records_and_producer_fields(open_log):
    log = open_log({"compression.type": "gzip"})
    batch = make_batch(5, compression=LZ4, value_size=200, producer_id=7, producer_epoch=2, base_sequence=0)
    assert batch[22] & 0x07 == LZ4  # the low byte of the attributes
    info = log.append_as_leader(batch, 0)
    assert (info.first_offset, info.last_offset) == (0, 4)
    assert stored_codecs(log) == [GZIP]
    assert records(log.read(0, 1 << 20)) == records(batch)
    header = next(log.segments[0].batch_headers())[1]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 0)
    retry = log.append_as_leader(batch, 0)  # the producer's retry is still recognised
    assert retry.duplicate and retry.first_offset == 0


def test_uncompressed_topic_decompresses_and_matching_codecs_are_kept_as_sent(open_log):
    log = open_log({"compression.type": "uncompressed"})
    log.append_as_leader(make_batch(3, compression=GZIP, value_size=200), 0)
    log.append_as_leader(make_batch(3, compression=NONE), 0)
    assert stored_codecs(log) == [NONE, NONE]
    values = [r[2].rstrip(b".") for r in records(log.read(0, 1 << 20))]
    assert values == [b"v-0", b"v-1", b"v-2"] * 2


def test_producer_keeps_every_codec(open_log):
    log = open_log()
    log.append_as_leader(make_batch(2, compression=LZ4, value_size=200), 0)
    log.append_as_leader(make_batch(2, compression=GZIP, value_size=200), 0)
    assert stored_codecs(log) == [LZ4, GZIP]


def test_unknown_codecs_are_invalid_configs_and_every_kafka_codec_is_valid():
    with pytest.raises(InvalidConfigurationError, match="must be one of producer, uncompressed"):
        LogConfig.from_configs({"compression.type": "brotli"})
    for name in ("snappy", "zstd"):
        assert LogConfig.from_configs({"compression.type": name}).compression_type == name


@pytest.mark.parametrize("compression_type, low, high", [("gzip", "1", "9"), ("lz4", "1", "12")])
def test_the_topic_compression_level_is_used(open_log, compression_type, low, high):
    batch = make_batch(200, value_size=100, compression=NONE)
    stored = []
    for level in (low, high):  # the same partition reopened: the second batch follows the first
        log = open_log({"compression.type": compression_type, f"compression.{compression_type}.level": level})
        stored.append(bytes(log.read(log.append_as_leader(batch, 0).first_offset, 1 << 20)))
        log.close()
    sent = [r[1:] for r in records(batch)]  # timestamps and values; offsets differ
    assert [r[1:] for r in records(stored[0])] == [r[1:] for r in records(stored[1])] == sent
    assert len(stored[1]) < len(stored[0])
