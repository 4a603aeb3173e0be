import struct

import crc32c
import pytest
from kafka.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageSizeTooLargeError,
    UnsupportedForMessageFormatError,
)
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from brokerd.storage.log_validator import stamp_batch, validate_client_batch
from brokerd.storage.record_batch import INT32_MAX, iter_batch_headers, read_header, set_log_append_time
from tests.brokerd.storage.conftest import GZIP, make_batch, records

pytestmark = pytest.mark.unit


def with_fixed_crc(batch: bytearray) -> bytes:
    """Re-sign a deliberately altered batch so only the alteration is wrong."""
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_header_fields_come_from_the_61_byte_header():
    batch = make_batch(3, timestamp=5_000, producer_id=7, producer_epoch=2, base_sequence=40)
    header = read_header(batch)
    assert header.size == len(batch)
    assert (header.magic, header.records_count, header.last_offset_delta) == (2, 3, 2)
    assert (header.base_timestamp, header.max_timestamp) == (5_000, 5_002)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert header.last_sequence == 42


def test_last_sequence_wraps_after_int32_max():
    header = read_header(make_batch(3, producer_id=1, producer_epoch=0, base_sequence=INT32_MAX - 1))
    assert header.last_sequence == 0


def test_iter_batch_headers_stops_at_a_torn_batch_or_zeros():
    batches = make_batch(2) + make_batch(5)
    torn = batches + make_batch(1)[:30]
    zeros = batches + bytes(4096)
    for data in (batches, torn, zeros):
        found = [
            (position, header.records_count) for position, header in iter_batch_headers(data, 0, len(data))
        ]
        assert found == [(0, 2), (len(make_batch(2)), 5)]


def test_stamping_sets_offset_and_epoch_and_keeps_the_client_crc():
    batch = make_batch(4)
    stamped, header = stamp_batch(batch, base_offset=1000, leader_epoch=9)
    assert (header.base_offset, header.last_offset, header.partition_leader_epoch) == (1000, 1003, 9)
    assert header.crc == read_header(batch).crc
    assert [offset for offset, _, _ in records(stamped)] == [1000, 1001, 1002, 1003]


def test_log_append_time_restamps_max_timestamp_and_recomputes_the_crc():
    batch = bytearray(make_batch(3, timestamp=10))
    set_log_append_time(batch, read_header(batch), 777_000)
    header = read_header(batch)
    assert header.is_log_append_time and header.max_timestamp == 777_000
    assert [timestamp for _, timestamp, _ in records(batch)] == [777_000] * 3  # CRC checked too


def test_a_valid_client_batch_passes():
    assert validate_client_batch(make_batch(2, compression=GZIP), 1 << 20).records_count == 2


@pytest.mark.parametrize("magic", [0, 1])
def test_old_message_formats_are_unsupported(magic):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=None if magic == 0 else 1, key=None, value=b"old")
    with pytest.raises(UnsupportedForMessageFormatError):
        validate_client_batch(bytes(builder.build()), 1 << 20)


def test_a_flipped_bit_fails_the_crc():
    batch = bytearray(make_batch(3))
    batch[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate_client_batch(batch, 1 << 20)


@pytest.mark.parametrize("cut", [10, 40, 70])
def test_truncated_batches_are_corrupt(cut):
    with pytest.raises(CorruptRecordError):
        validate_client_batch(make_batch(3)[:cut], 1 << 20)


def test_two_batches_for_one_partition_are_rejected():
    with pytest.raises(InvalidRecordError, match="exactly one"):
        validate_client_batch(make_batch(1) + make_batch(1), 1 << 20)


def test_batches_over_max_message_bytes_are_too_large():
    batch = make_batch(10, value_size=100)
    assert validate_client_batch(batch, len(batch))
    with pytest.raises(MessageSizeTooLargeError, match="max.message.bytes"):
        validate_client_batch(batch, len(batch) - 1)


def test_control_batches_from_clients_are_rejected():
    batch = bytearray(make_batch(1, producer_id=5, producer_epoch=0, base_sequence=0, transactional=True))
    struct.pack_into(">h", batch, 21, read_header(batch).attributes | 0x20)
    with pytest.raises(InvalidRecordError, match="control"):
        validate_client_batch(with_fixed_crc(batch), 1 << 20)


def test_record_count_must_match_last_offset_delta():
    batch = bytearray(make_batch(3))
    struct.pack_into(">i", batch, 57, 4)
    with pytest.raises(InvalidRecordError, match="lastOffsetDelta"):
        validate_client_batch(with_fixed_crc(batch), 1 << 20)


def test_idempotent_batches_need_a_sequence():
    batch = bytearray(make_batch(1, producer_id=5, producer_epoch=0, base_sequence=0))
    struct.pack_into(">i", batch, 53, -1)
    with pytest.raises(InvalidRecordError, match="sequence"):
        validate_client_batch(with_fixed_crc(batch), 1 << 20)


def test_client_batches_must_start_at_offset_zero():
    stamped, _ = stamp_batch(make_batch(1), base_offset=12, leader_epoch=0)
    with pytest.raises(InvalidRecordError, match="baseOffset"):
        validate_client_batch(stamped, 1 << 20)


def test_unknown_compression_types_are_rejected():
    batch = bytearray(make_batch(1))
    struct.pack_into(">h", batch, 21, 7)
    with pytest.raises(InvalidRecordError, match="compression"):
        validate_client_batch(with_fixed_crc(batch), 1 << 20)
