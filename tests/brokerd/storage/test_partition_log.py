import pytest
from kafka.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceNumberError,
)

from brokerd.storage.leader_epoch_cache import LeaderEpochFileCache
from brokerd.storage.log_config import LogConfig
from brokerd.storage.log_loader import CLEAN_SHUTDOWN_FILE
from brokerd.storage.partition_log import PartitionLog
from brokerd.storage.record_batch import iter_batch_headers
from brokerd.storage.time_index import TimestampOffset
from tests.brokerd.storage.conftest import GZIP, LZ4, NONE, make_batch, records

pytestmark = pytest.mark.unit

SMALL = {"segment.bytes": "4096", "index.interval.bytes": "512"}
HOUR_MS = 3600 * 1000


def read_all(log, start=None, max_bytes=3000):
    """Consume from ``start`` to the log end the way a consumer does: fetch, skip, advance."""
    offset = log.log_start_offset if start is None else start
    found = []
    while offset < log.log_end_offset:
        fetched = [r for r in records(log.read(offset, max_bytes)) if r[0] >= offset]
        found += fetched
        offset = fetched[-1][0] + 1
    return found


def produce(log, batches, count=7, epoch=0, **kwargs):
    return [
        log.append_as_leader(make_batch(count, prefix=f"b{i}", value_size=40, **kwargs), epoch)
        for i in range(batches)
    ]


def test_offsets_are_contiguous_across_appends_and_rolls(open_log):
    log = open_log(SMALL)
    infos = produce(log, 60)
    assert [(info.first_offset, info.last_offset) for info in infos] == [
        (7 * i, 7 * i + 6) for i in range(60)
    ]
    assert all(info.log_append_time == -1 and not info.duplicate for info in infos)
    assert len(log.segments) > 5 and log.log_end_offset == 420
    consumed = read_all(log)
    assert [offset for offset, _, _ in consumed] == list(range(420))
    assert consumed[7 * 33 + 4][2] == b"b33-4".ljust(40, b".")


@pytest.mark.parametrize("compression", [GZIP, LZ4])
def test_compressed_batches_are_stored_as_sent(open_log, compression):
    log = open_log(SMALL)
    batch = make_batch(50, compression=compression)
    log.append_as_leader(make_batch(3), 0)
    info = log.append_as_leader(batch, 0)
    assert (info.first_offset, info.last_offset) == (3, 52)
    data = log.read(3, 1 << 20)
    assert bytes(data)[8:] == batch[8:12] + bytes(4) + batch[16:]  # only offset and epoch were stamped
    assert [offset for offset, _, _ in records(data)] == list(range(3, 53))


def test_read_range_and_bounds(open_log):
    log = open_log(SMALL)
    produce(log, 10)
    assert len(log.read(70, 1000)) == 0
    assert len(log.read(35, 1 << 20, upper_bound_offset=35)) == 0
    bounded = log.read(0, 1 << 20, upper_bound_offset=36)
    assert [h.base_offset for _, h in iter_batch_headers(bounded, 0, len(bounded))] == [0, 7, 14, 21, 28, 35]
    for offset in (-1, 71):
        with pytest.raises(OffsetOutOfRangeError):
            log.read(offset, 1000)


def test_rejected_batches_leave_the_log_untouched(open_log):
    log = open_log({"max.message.bytes": "2000"})
    produce(log, 2)
    before = (log.log_end_offset, log.size_in_bytes)
    corrupt = bytearray(make_batch(3))
    corrupt[-2] ^= 0xFF
    for batch, error in [
        (bytes(corrupt), CorruptRecordError),
        (make_batch(100, value_size=30), MessageSizeTooLargeError),
        (make_batch(1) + make_batch(1), InvalidRecordError),
    ]:
        with pytest.raises(error):
            log.append_as_leader(batch, 0)
    assert (log.log_end_offset, log.size_in_bytes) == before


def test_an_idempotent_retry_returns_the_original_offsets(open_log):
    log = open_log()
    produce(log, 1)
    batch = make_batch(3, producer_id=9, producer_epoch=0, base_sequence=0)
    first = log.append_as_leader(batch, 0)
    produce(log, 1)
    retry = log.append_as_leader(batch, 0)
    assert (retry.first_offset, retry.last_offset, retry.duplicate) == (7, 9, True)
    assert log.log_end_offset == 17 and not first.duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(make_batch(1, producer_id=9, producer_epoch=0, base_sequence=4), 0)
    log.append_as_leader(make_batch(1, producer_id=9, producer_epoch=1, base_sequence=0), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(make_batch(1, producer_id=9, producer_epoch=0, base_sequence=3), 0)


def test_producer_state_survives_a_restart(open_log):
    log = open_log(SMALL)
    batches = [make_batch(2, producer_id=9, producer_epoch=0, base_sequence=2 * i) for i in range(30)]
    for batch in batches:
        log.append_as_leader(batch, 0)
    log.close()
    log = open_log(SMALL)
    assert log.append_as_leader(batches[-2], 0).first_offset == 56
    assert log.append_as_leader(batches[-2], 0).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append_as_leader(make_batch(1, producer_id=9, producer_epoch=0, base_sequence=61), 0)


def test_log_append_time_topics_stamp_the_broker_clock(open_log, clock):
    log = open_log({"message.timestamp.type": "LogAppendTime"})
    info = log.append_as_leader(make_batch(3, timestamp=5), 0, now_ms=clock.now_ms)
    assert info.log_append_time == info.max_timestamp == clock.now_ms
    assert [timestamp for _, timestamp, _ in records(log.read(0, 1000))] == [clock.now_ms] * 3


def test_offset_for_timestamp_searches_all_segments(open_log):
    log = open_log(SMALL)
    for i in range(40):
        log.append_as_leader(make_batch(5, timestamp=10_000 + 100 * i, value_size=40), 0)
    assert log.offset_for_timestamp(0) == TimestampOffset(10_000, 0)
    assert log.offset_for_timestamp(12_345) == TimestampOffset(12_400, 120)
    assert log.offset_for_timestamp(12_402) == TimestampOffset(12_402, 122)
    assert log.offset_for_timestamp(13_904) == TimestampOffset(13_904, 199)
    assert log.offset_for_timestamp(13_905) is None


def test_leader_epochs_are_cached_and_checkpointed(open_log, log_dir):
    log = open_log(SMALL)
    for epoch in (0, 0, 2, 2, 5):
        produce(log, 1, epoch=epoch)
    assert log.latest_epoch == 5
    assert log.end_offset_for_epoch(0) == (0, 14)
    assert log.end_offset_for_epoch(3) == (2, 28)
    assert log.end_offset_for_epoch(5) == (5, 35)
    assert [tuple(e) for e in LeaderEpochFileCache(log_dir).entries] == [(0, 0), (2, 14), (5, 28)]


def test_follower_appends_keep_the_leaders_offsets_and_epochs(open_log, tmp_path):
    leader = open_log(SMALL)
    for epoch in (1, 1, 3):
        produce(leader, 4, epoch=epoch)
    follower = PartitionLog.open(tmp_path / "follower-0", LogConfig.from_configs(SMALL))
    offset = 0
    while offset < leader.log_end_offset:
        info = follower.append_as_follower(leader.read(offset, 2000))
        offset = info.last_offset + 1
    assert follower.log_end_offset == leader.log_end_offset == 84
    assert read_all(follower) == read_all(leader)
    for offset in range(0, 84, 7):
        assert bytes(follower.read(offset, 1)) == bytes(leader.read(offset, 1))
    assert follower.end_offset_for_epoch(1) == (1, 56)


def test_follower_appends_must_continue_the_log_and_pass_the_crc(open_log, tmp_path):
    leader = open_log()
    produce(leader, 3)
    data = bytes(leader.read(0, 1 << 20))
    follower = PartitionLog.open(tmp_path / "follower-0", LogConfig.from_configs({}))
    with pytest.raises(InvalidRecordError):
        follower.append_as_follower(leader.read(7, 1 << 20))
    damaged = bytearray(data)
    damaged[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        follower.append_as_follower(damaged)
    assert follower.log_end_offset == 0
    assert follower.append_as_follower(data + data[:50]).last_offset == 20  # partial tail ignored


def test_truncate_to_drops_later_segments_and_continues_from_there(open_log):
    log = open_log(SMALL)
    for epoch in range(30):
        produce(log, 1, epoch=epoch)
    assert log.truncate_to(100)
    assert log.log_end_offset == 98 and log.latest_epoch == 13  # the batch holding 100 starts at 98
    assert all(segment.base_offset <= 98 for segment in log.segments)
    produce(log, 3, epoch=40)
    assert [offset for offset, _, _ in read_all(log)] == list(range(119))
    assert not log.truncate_to(500)


def test_truncate_fully_and_start_at(open_log):
    log = open_log(SMALL)
    produce(log, 20, epoch=3)
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset, log.latest_epoch) == (1000, 1000, None)
    assert produce(log, 1)[0].first_offset == 1000
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)


def test_retention_by_bytes_deletes_oldest_segments(open_log):
    log = open_log({**SMALL, "retention.bytes": "10000"})
    produce(log, 80)
    assert log.delete_retained_segments() > 0
    assert 10000 <= log.size_in_bytes < 10000 + log.segments[0].size  # keeps at least retention.bytes
    assert log.log_start_offset == log.segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert read_all(log)[-1][0] == 559


def test_retention_by_time_never_loses_the_log_end(open_log, clock):
    log = open_log({**SMALL, "retention.ms": str(HOUR_MS)})
    clock.now_ms = 10 * HOUR_MS
    produce(log, 20, timestamp=clock.now_ms)
    produce(log, 20, timestamp=clock.now_ms + HOUR_MS)
    clock.now_ms += 2 * HOUR_MS + 1
    assert log.delete_retained_segments() > 0
    assert log.segments[0].max_timestamp >= HOUR_MS * 11
    clock.now_ms += HOUR_MS
    log.delete_retained_segments()
    assert (log.log_start_offset, log.log_end_offset, log.size_in_bytes) == (280, 280, 0)
    assert produce(log, 1)[0].first_offset == 280


def test_retention_waits_for_the_high_watermark(open_log):
    log = open_log({**SMALL, "retention.bytes": "0"})
    produce(log, 30)
    assert log.delete_retained_segments(high_watermark=0) == 0
    log.delete_retained_segments(high_watermark=100)
    assert log.segments[0].base_offset <= 100 <= log.log_end_offset


def test_segment_ms_rolls_an_idle_active_segment(open_log, clock):
    log = open_log({"segment.ms": "1000"})
    produce(log, 1, count=1, timestamp=clock.now_ms)
    assert not log.maybe_roll_on_time(clock.now_ms + 1000)
    assert log.maybe_roll_on_time(clock.now_ms + 1001)
    assert [segment.base_offset for segment in log.segments] == [0, 1]


def test_segment_jitter_ms_rolls_each_segment_up_to_that_much_sooner(open_log, clock):
    log = open_log({"segment.ms": "1000", "segment.jitter.ms": "600"})
    produce(log, 1, count=1, timestamp=clock.now_ms)
    assert 0 <= log.segments[-1].roll_jitter_ms < 600
    log.segments[-1].roll_jitter_ms = 400  # the draw, made known
    assert not log.maybe_roll_on_time(clock.now_ms + 600)
    assert log.maybe_roll_on_time(clock.now_ms + 601)


def test_flush_messages_advances_the_recovery_point(open_log):
    log = open_log({"flush.messages": "10"})
    produce(log, 1)
    assert log.recovery_point == 0
    produce(log, 1)
    assert log.recovery_point == 14


def test_by_default_only_rolls_and_close_flush(open_log):
    log = open_log(SMALL)
    produce(log, 3)
    assert log.recovery_point == 0
    produce(log, 20)
    assert log.recovery_point == log.segments[-1].base_offset > 0


def test_close_leaves_trimmed_files_and_a_clean_shutdown_marker(open_log, log_dir):
    log = open_log(SMALL)
    produce(log, 30)
    consumed = read_all(log)
    log.close()
    assert (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    assert sum(p.stat().st_size for p in log_dir.glob("*.log")) == log.size_in_bytes
    reopened = open_log(SMALL)
    assert not (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    assert reopened.recovery_point == reopened.log_end_offset == 210
    assert read_all(reopened) == consumed


def test_config_updates_apply_to_the_next_append(open_log):
    log = open_log()
    produce(log, 1)
    log.update_config(LogConfig.from_configs({**log.config.overrides, "max.message.bytes": "100"}))
    with pytest.raises(MessageSizeTooLargeError):
        produce(log, 1)


def test_delete_removes_the_directory(open_log, log_dir):
    log = open_log(SMALL)
    produce(log, 30)
    log.delete()
    assert list(log_dir.parent.iterdir()) == []


def test_uncompressed_and_compressed_batches_interleave(open_log):
    log = open_log(SMALL)
    for i, compression in enumerate([NONE, GZIP, LZ4] * 5):
        log.append_as_leader(make_batch(4, prefix=f"c{i}", compression=compression), 0)
    assert [value for _, _, value in read_all(log)][::4] == [f"c{i}-0".encode() for i in range(15)]


def test_read_views_stay_valid_while_segments_are_rolled_and_deleted(open_log):
    log = open_log({**SMALL, "retention.bytes": "0"})
    produce(log, 3)
    held = log.read(0, 1 << 20)
    expected = bytes(held)
    produce(log, 30)
    assert log.delete_retained_segments() > 0 and log.log_start_offset > 0
    log.close()
    assert bytes(held) == expected


def test_offset_of_max_timestamp_is_the_first_record_with_the_largest_timestamp(open_log):
    log = open_log(SMALL)
    assert log.offset_of_max_timestamp() is None
    log.append_as_leader(make_batch(5, timestamp=5_000), 0)  # 5000..5004 at offsets 0-4
    log.append_as_leader(make_batch(3, timestamp=9_000), 0)  # 9000..9002 at offsets 5-7
    log.roll()
    log.append_as_leader(make_batch(4, timestamp=7_000, value_size=40), 0)
    assert log.offset_of_max_timestamp() == TimestampOffset(9_002, 7)
    log.append_as_leader(make_batch(1, timestamp=9_002), 0)  # a tie later keeps the first
    assert log.offset_of_max_timestamp() == TimestampOffset(9_002, 7)
