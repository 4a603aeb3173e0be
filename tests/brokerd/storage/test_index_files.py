"""Indexes live in memory and are written to their files on flush, roll and close: a replica in
use holds one descriptor (its active segment's mapped log), and whatever a crash leaves of the
index files, the reopened log finds every record by offset and by timestamp."""

import os
from pathlib import Path

import pytest

from brokerd.storage.offset_index import OffsetIndex
from brokerd.storage.record_batch import read_header
from brokerd.storage.time_index import TimeIndex, TimestampOffset
from tests.brokerd.storage.conftest import crash, make_batch, records

pytestmark = pytest.mark.unit

SMALL = {"segment.bytes": "4096", "index.interval.bytes": "512"}


def descriptors_under(directory: Path) -> list[str]:
    """What this process's open descriptors point to inside ``directory``."""
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:
            continue  # the descriptor listdir itself used
        if target.startswith(f"{directory}{os.sep}"):
            targets.append(target)
    return targets


def fill(log, batches, first=0, value_size=40):
    """Append batches ``first``..; batch i holds 5 records stamped from 1000 * i, one ms apart."""
    for i in range(first, first + batches):
        log.append_as_leader(make_batch(5, prefix=f"b{i}", timestamp=1000 * i, value_size=value_size), 0)


def every_record(log):
    found, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        fetched = [r for r in records(log.read(offset, 1 << 20)) if r[0] >= offset]
        found += fetched
        offset = fetched[-1][0] + 1
    return found


def assert_indexes_match_the_log(log):
    """Every entry of every segment's indexes tells the truth about its batches."""
    timestamps = {offset: timestamp for offset, timestamp, _ in every_record(log)}
    for segment in log.segments:
        for slot in range(segment.offset_index.entries):
            relative, position = segment.offset_index.entry(slot)
            assert read_header(segment.buffer, position).last_offset == segment.base_offset + relative
        for slot in range(segment.time_index.entries):
            timestamp, relative = segment.time_index.entry(slot)
            assert timestamps[segment.base_offset + relative] == timestamp  # stamps only increase


def index_entries(log):
    return [
        (
            [s.offset_index.entry(i) for i in range(s.offset_index.entries)],
            [s.time_index.entry(i) for i in range(s.time_index.entries)],
        )
        for s in log.segments
    ]


def assert_found_by_offset_and_time(log, expected):
    assert every_record(log) == expected
    for offset, timestamp, value in expected:
        assert (offset, timestamp, value) in records(log.read(offset, 1))
        assert log.offset_for_timestamp(timestamp) == TimestampOffset(timestamp, offset)
    assert_indexes_match_the_log(log)


def test_a_replica_holds_one_descriptor_per_mapped_segment_log_and_none_for_indexes(open_log, log_dir):
    log = open_log(SMALL)
    fill(log, 60)
    assert len(log.segments) > 3
    assert descriptors_under(log_dir) == [str(log.segments[-1].path)]
    every_record(log)
    held = descriptors_under(log_dir)
    assert all(target.endswith(".log") for target in held)
    assert len(held) == len(set(held)) <= len(log.segments)
    log.close()
    assert descriptors_under(log_dir) == []
    reopened = open_log(SMALL)
    assert descriptors_under(log_dir) == [str(reopened.segments[-1].path)]


def test_idle_empty_partitions_hold_no_descriptor(tmp_path, open_log, log_dir):
    logs = [open_log(SMALL)]
    for partition in range(1, 20):
        logs.append(type(logs[0]).open(tmp_path / f"topic-{partition}", logs[0].config))
    assert descriptors_under(tmp_path) == []
    assert all(log.read(0, 1 << 20) == b"" for log in logs)
    assert descriptors_under(tmp_path) == []


def test_after_a_crash_every_record_is_found_by_offset_and_by_time(open_log):
    log = open_log(SMALL)
    fill(log, 50)
    log.flush()
    fill(log, 7, first=50)  # after the recovery point: its index entries die with the process
    expected, entries = every_record(log), index_entries(log)
    crash(log)
    del log
    reopened = open_log(SMALL)
    assert_found_by_offset_and_time(reopened, expected)
    assert index_entries(reopened) == entries


def test_after_a_truncation_and_a_crash_no_stale_index_entry_survives(open_log):
    log = open_log(SMALL)
    fill(log, 50)
    log.flush()
    log.truncate_to(log.segments[1].base_offset + 7)
    fill(log, 40, first=100, value_size=90)  # same offsets, other positions and timestamps
    log.flush()
    expected = every_record(log)
    crash(log)
    del log
    reopened = open_log(SMALL)
    assert_found_by_offset_and_time(reopened, expected)
    assert all(offsets and times for offsets, times in index_entries(reopened)[:-1])
    reopened.truncate_to(reopened.log_end_offset - 12)
    expected = every_record(reopened)
    reopened.close()
    assert_found_by_offset_and_time(open_log(SMALL), expected)


def test_an_index_file_lags_until_flushed_and_holds_no_more_than_its_entries(tmp_path):
    path = tmp_path / "00000000000000000000.timeindex"
    index = TimeIndex(path, 0, 1 << 20)
    index.maybe_append(1_000, 3)
    assert not path.exists()
    index.flush()
    index.maybe_append(2_000, 9)
    assert path.read_bytes() == TimeIndex.ENTRY.pack(1_000, 3)
    index.flush()
    assert path.stat().st_size == 2 * TimeIndex.ENTRY.size


def test_an_index_written_closed_and_reopened_is_identical(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, 1 << 20)
    for offset in range(104, 400, 7):
        index.append(offset, (offset - 100) * 60)
    index.flush()
    index.truncate_to(300)
    index.append(303, 12_000)
    written = [index.entry(slot) for slot in range(index.entries)]
    index.close()
    reopened = OffsetIndex(path, 100, 1 << 20)
    assert reopened.is_sane()
    assert [reopened.entry(slot) for slot in range(reopened.entries)] == written
    assert path.read_bytes() == b"".join(OffsetIndex.ENTRY.pack(*entry) for entry in written)
