import pytest

from brokerd.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochFileCache

pytestmark = pytest.mark.unit


def cache_with(tmp_path, *entries):
    cache = LeaderEpochFileCache(tmp_path)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_checkpoint_file_uses_kafkas_text_format_and_round_trips(tmp_path):
    cache_with(tmp_path, (0, 0), (0, 5), (2, 10), (5, 42))
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n3\n0 0\n2 10\n5 42\n"
    reloaded = LeaderEpochFileCache(tmp_path)
    assert reloaded.latest_epoch == 5
    assert reloaded.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(5, 42)]


def test_a_missing_or_malformed_file_starts_empty_for_a_rebuild(tmp_path):
    assert LeaderEpochFileCache(tmp_path).entries == []
    for malformed in ["0\n2\n1 0\n", "0\n1\nx 0\n", "0\n1\n1 2 3\n", "1\n0\n", ""]:
        (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text(malformed)
        assert LeaderEpochFileCache(tmp_path).latest_epoch is None


def test_end_offset_for_epoch_answers_like_offset_for_leader_epoch(tmp_path):
    cache = cache_with(tmp_path, (1, 0), (3, 10), (4, 25))
    assert cache.end_offset_for(4, log_end_offset=40) == (4, 40)
    assert cache.end_offset_for(3, 40) == (3, 25)
    assert cache.end_offset_for(2, 40) == (1, 10)  # epoch 2 never wrote: the follower truncates to 10
    assert cache.end_offset_for(0, 40) == (0, 0)
    assert cache.end_offset_for(9, 40) == (-1, -1)
    assert cache.end_offset_for(-1, 40) == (-1, -1)


def test_assigning_an_epoch_drops_entries_it_contradicts(tmp_path):
    cache = cache_with(tmp_path, (1, 0), (3, 10), (4, 25))
    cache.assign(5, 20)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20)]


def test_truncation_from_both_ends(tmp_path):
    cache = cache_with(tmp_path, (1, 0), (3, 10), (4, 25))
    cache.truncate_from_end(25)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [EpochEntry(3, 12)]
    assert LeaderEpochFileCache(tmp_path).entries == [EpochEntry(3, 12)]
