import struct

import crc32c
import pytest

from brokerd.storage.log_config import LogConfig
from brokerd.storage.log_segment import LogSegment, segment_path
from brokerd.storage.log_validator import stamp_batch
from brokerd.storage.record_batch import iter_batch_headers
from brokerd.storage.time_index import TimestampOffset
from tests.brokerd.storage.conftest import GZIP, LZ4, NONE, make_batch, records

pytestmark = pytest.mark.unit


def new_segment(tmp_path, base_offset=0, **configs):
    config = LogConfig.from_configs({k.replace("_", "."): str(v) for k, v in configs.items()})
    return LogSegment.create(tmp_path, base_offset, config, config.segment_bytes, now_ms=0)


def fill(segment, batches, count=5, compression=NONE, timestamp_step=10):
    """Append ``batches`` batches of ``count`` records; batch i is stamped from 1000 + i * timestamp_step."""
    sizes = []
    for i in range(batches):
        batch = make_batch(
            count, prefix=f"b{i}", timestamp=1000 + i * timestamp_step, value_size=50, compression=compression
        )
        stamped, header = stamp_batch(batch, segment.next_offset, leader_epoch=0)
        segment.append(stamped, header)
        sizes.append(header.size)
    return sizes


def base_offsets(data):
    return [header.base_offset for _, header in iter_batch_headers(data, 0, len(data))]


def test_files_are_named_by_the_20_digit_base_offset(tmp_path):
    segment = new_segment(tmp_path, 1234, segment_bytes=4096)
    assert segment.path == tmp_path / "00000000000000001234.log"
    assert segment_path(tmp_path, 1234, ".timeindex").exists()
    assert segment.path.stat().st_size == 4096  # preallocated for the mmap


def test_read_returns_whole_batches_starting_with_the_one_holding_the_offset(tmp_path):
    segment = new_segment(tmp_path, 100, segment_bytes=1 << 20)
    fill(segment, 10)
    assert base_offsets(segment.read(100, 1 << 20, max_offset=150)) == list(range(100, 150, 5))
    assert base_offsets(segment.read(113, 1 << 20, max_offset=150))[0] == 110
    assert segment.read(150, 1 << 20, max_offset=200) is None


def test_read_respects_max_bytes_but_returns_at_least_one_batch(tmp_path):
    segment = new_segment(tmp_path, segment_bytes=1 << 20)
    size = fill(segment, 10)[0]
    assert base_offsets(segment.read(0, 3 * size, 50)) == [0, 5, 10]
    assert base_offsets(segment.read(0, 3 * size - 1, 50)) == [0, 5]
    assert base_offsets(segment.read(7, 1, 50)) == [5]


def test_read_stops_before_the_upper_bound(tmp_path):
    segment = new_segment(tmp_path, segment_bytes=1 << 20)
    fill(segment, 10)
    assert base_offsets(segment.read(0, 1 << 20, max_offset=21)) == [0, 5, 10, 15, 20]
    assert base_offsets(segment.read(0, 1 << 20, max_offset=20)) == [0, 5, 10, 15]


def test_reads_are_views_of_the_mapped_file(tmp_path):
    segment = new_segment(tmp_path, segment_bytes=1 << 20)
    fill(segment, 2)
    data = segment.read(0, 1 << 20, 10)
    assert isinstance(data, memoryview)
    assert [value for _, _, value in records(data)][:2] == [b"b0-0".ljust(50, b"."), b"b0-1".ljust(50, b".")]


def test_the_offset_index_gets_an_entry_per_index_interval(tmp_path):
    segment = new_segment(tmp_path, segment_bytes=1 << 20, index_interval_bytes=1000)
    size = fill(segment, 40)[0]
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    positions = [0] + [position for _, position in entries]
    gaps = [b - a for a, b in zip(positions, positions[1:])]
    assert entries and all(1000 < gap <= 1000 + size for gap in gaps)
    assert all(relative_offset == position // size * 5 + 4 for relative_offset, position in entries)
    for offset in range(0, 200, 7):
        assert base_offsets(segment.read(offset, 1, 200)) == [offset - offset % 5]


@pytest.mark.parametrize("compression", [NONE, GZIP, LZ4])
def test_find_offset_for_timestamp_finds_the_first_record_at_or_after(tmp_path, compression):
    segment = new_segment(tmp_path, 50, segment_bytes=1 << 20, index_interval_bytes=500)
    fill(segment, 30, compression=compression, timestamp_step=100)
    assert segment.find_offset_for_timestamp(0) == TimestampOffset(1000, 50)
    assert segment.find_offset_for_timestamp(1203) == TimestampOffset(1203, 63)
    assert segment.find_offset_for_timestamp(1205) == TimestampOffset(1300, 65)
    assert segment.find_offset_for_timestamp(3904) == TimestampOffset(3904, 199)
    assert segment.find_offset_for_timestamp(3905) is None


def test_roll_conditions(tmp_path):
    config = LogConfig.from_configs({"segment.bytes": "2000", "segment.ms": "1000"})
    segment = LogSegment.create(tmp_path, 0, config, config.segment_bytes, now_ms=0)

    def next_batch(timestamp=5000):
        return stamp_batch(make_batch(1, value_size=300, timestamp=timestamp), segment.next_offset, 0)

    stamped, header = next_batch()
    assert not segment.should_roll(config, header, now_ms=0)
    segment.append(stamped, header)
    assert not segment.should_roll(config, next_batch(timestamp=6000)[1], now_ms=0)
    assert segment.should_roll(config, next_batch(timestamp=6001)[1], now_ms=0)  # segment.ms, in batch time
    while not segment.should_roll(config, next_batch()[1], now_ms=0):
        segment.append(*next_batch())
    assert 2000 - header.size < segment.size <= 2000  # segment.bytes


def test_a_full_index_rolls_the_segment(tmp_path):
    config = LogConfig.from_configs({"segment.index.bytes": "48", "index.interval.bytes": "0"})
    segment = LogSegment.create(tmp_path, 0, config, 1 << 20, now_ms=0)
    appended = 0
    while not segment.should_roll(config, stamp_batch(make_batch(1), segment.next_offset, 0)[1], now_ms=0):
        segment.append(*stamp_batch(make_batch(1, timestamp=appended), segment.next_offset, 0))
        appended += 1
    assert appended == 4 and segment.time_index.is_full


def test_truncate_removes_the_batch_holding_the_offset_and_later(tmp_path):
    segment = new_segment(tmp_path, segment_bytes=1 << 20, index_interval_bytes=300)
    sizes = fill(segment, 20)
    assert segment.truncate_to(52) == sum(sizes[10:])
    assert (segment.next_offset, segment.size, segment.max_timestamp) == (50, sum(sizes[:10]), 1094)
    assert base_offsets(segment.read(0, 1 << 20, 10**6))[-1] == 45
    assert all(segment.offset_index.entry(i)[0] < 50 for i in range(segment.offset_index.entries))
    fill(segment, 1)
    assert segment.next_offset == 55


def test_close_trims_files_and_load_trusts_them(tmp_path):
    config = LogConfig.from_configs({"segment.bytes": str(1 << 20), "index.interval.bytes": "300"})
    segment = LogSegment.create(tmp_path, 0, config, config.segment_bytes, now_ms=0)
    sizes = fill(segment, 20)
    entries = segment.offset_index.entries
    segment.close()
    assert segment.path.stat().st_size == sum(sizes)
    reopened = LogSegment(tmp_path, 0, config, now_ms=0)
    assert reopened.load()
    assert (reopened.size, reopened.next_offset, reopened.max_timestamp) == (sum(sizes), 100, 1194)
    assert reopened.offset_index.entries == entries


def test_recover_cuts_at_the_first_corrupt_batch_and_rebuilds_indexes(tmp_path):
    config = LogConfig.from_configs({"segment.bytes": str(1 << 20), "index.interval.bytes": "300"})
    segment = LogSegment.create(tmp_path, 0, config, config.segment_bytes, now_ms=0)
    sizes = fill(segment, 20)
    entries_before = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    segment.close()
    with open(segment.path, "r+b") as file:
        file.seek(sum(sizes[:12]) + 70)
        file.write(b"X")
    damaged = LogSegment(tmp_path, 0, config, now_ms=0)
    assert damaged.recover() == sum(sizes[12:])
    assert (damaged.next_offset, damaged.size) == (60, sum(sizes[:12]))
    rebuilt = [damaged.offset_index.entry(i) for i in range(damaged.offset_index.entries)]
    assert rebuilt == [entry for entry in entries_before if entry[1] < sum(sizes[:12])]


def test_undecodable_batches_are_found_at_batch_granularity(tmp_path):
    segment = new_segment(tmp_path, segment_bytes=1 << 20)
    fill(segment, 2, timestamp_step=100)
    garbled = bytearray(make_batch(5, timestamp=1300, value_size=50, compression=GZIP))
    garbled[70:80] = bytes(10)  # the gzip stream no longer inflates; the broker never needed it to
    struct.pack_into(">I", garbled, 17, crc32c.crc32c(bytes(garbled[21:])))
    segment.append(*stamp_batch(garbled, segment.next_offset, 0))
    assert segment.find_offset_for_timestamp(1302) == TimestampOffset(1304, 10)
