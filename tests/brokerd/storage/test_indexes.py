import pytest

from brokerd.storage.offset_index import OffsetIndex, OffsetPosition
from brokerd.storage.time_index import TimeIndex, TimestampOffset

pytestmark = pytest.mark.unit


def test_offset_lookup_finds_the_last_entry_at_or_before(tmp_path):
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 1024)
    for offset, position in [(104, 0), (109, 4100), (130, 8300)]:
        index.append(offset, position)
    assert index.lookup(99) == OffsetPosition(100, 0)
    assert index.lookup(104) == OffsetPosition(104, 0)
    assert index.lookup(129) == OffsetPosition(109, 4100)
    assert index.lookup(10**9) == OffsetPosition(130, 8300)
    with pytest.raises(ValueError):
        index.append(130, 9000)


def test_offset_index_is_trimmed_and_reloaded_in_kafkas_format(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 1024)
    index.append(3, 0)
    index.append(7, 4200)
    index.close()
    assert path.read_bytes() == bytes.fromhex("00000003 00000000 00000007 00001068")
    reopened = OffsetIndex(path, 0, 1024)
    assert reopened.is_sane() and reopened.entries == 2
    assert reopened.lookup(8) == OffsetPosition(7, 4200)


def test_truncation_drops_entries_at_and_after_the_offset(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", 0, 1024)
    for offset in (10, 20, 30):
        index.append(offset, offset * 100)
    index.truncate_to(20)
    assert index.entries == 1 and index.lookup(25) == OffsetPosition(10, 1000)


def test_a_preallocated_file_of_zeros_is_not_sane(tmp_path):
    path = tmp_path / "x.index"
    path.write_bytes(bytes(4096))
    assert not OffsetIndex(path, 0, 4096).is_sane()
    path.write_bytes(bytes(7))
    assert not OffsetIndex(path, 0, 4096).is_sane()


def test_offset_index_fills_up(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", 0, 24)
    for offset in range(3):
        index.append(offset, offset)
    assert index.is_full
    with pytest.raises(RuntimeError):
        index.append(5, 5)


def test_time_index_keeps_only_increasing_timestamps(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", 50, 1200)
    index.maybe_append(1_000, 55)
    index.maybe_append(1_000, 60)
    index.maybe_append(900, 61)
    index.maybe_append(2_000, 70)
    assert index.entries == 2
    assert index.lookup(999) == TimestampOffset(-1, 50)
    assert index.lookup(1_500) == TimestampOffset(1_000, 55)
    assert index.lookup(5_000) == TimestampOffset(2_000, 70)
    index.truncate_to(70)
    assert index.last_entry() == (1_000, 5)


def test_time_index_keeps_a_slot_for_the_roll(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", 0, 36)
    index.maybe_append(1, 1)
    index.maybe_append(2, 2)
    assert index.is_full
    with pytest.raises(RuntimeError):
        index.maybe_append(3, 3)
    index.maybe_append(3, 3, skip_full_check=True)
    assert index.entries == 3
