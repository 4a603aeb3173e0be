"""Log compaction on real segment files: latest value per key, offsets kept, tombstones aged out."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from brokerd.storage.log_cleaner import CLEANED_SUFFIX, LogCleaner, compact
from brokerd.storage.log_validator import RecordErrorsError
from tests.brokerd.storage.conftest import LZ4, NONE, crash

pytestmark = pytest.mark.unit

DAY_MS = 24 * 3600 * 1000
SMALL_SEGMENTS = {"segment.bytes": "2048", "cleanup.policy": "compact"}


def keyed_batch(
    pairs: list[tuple[bytes, bytes | None]],
    timestamp: int,
    compression: int = NONE,
    producer_id: int = -1,
    base_sequence: int = -1,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, (key, value) in enumerate(pairs):
        builder.append(i, timestamp=timestamp, key=key, value=value, headers=[])
    return bytes(builder.build())


def read_all(log) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record, decoded as a consumer would, CRCs checked. Like a
    consumer, it moves past offsets cleaning removed (a gap at a segment's end included)."""
    found, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        batches = MemoryRecords(bytes(log.read(offset, 1 << 20)))
        last = None
        while (batch := batches.next_batch()) is not None:
            assert batch.validate_crc()
            found.extend((r.offset, r.key, r.value) for r in batch)
            last = batch.base_offset + batch.last_offset_delta
        offset = (
            last + 1
            if last is not None
            else min(s.base_offset for s in log.segments if s.base_offset > offset)
        )
    return found


def fill(
    log, clock, updates: int, keys: int, compression: int = NONE, value_size: int = 0
) -> dict[bytes, tuple[int, bytes]]:
    """Append ``updates`` values over ``keys`` keys, ten per batch; return each key's latest."""
    latest = {}
    for start in range(0, updates, 10):
        pairs = [
            (b"k%d" % (i % keys), (b"v%d" % i).ljust(value_size, b".")) for i in range(start, start + 10)
        ]
        info = log.append_as_leader(keyed_batch(pairs, clock.now_ms, compression), 0)
        for i, (key, value) in enumerate(pairs):
            latest[key] = (info.first_offset + i, value)
    return latest


def test_only_the_latest_value_of_each_key_survives_at_its_original_offset(open_log, clock):
    log = open_log(SMALL_SEGMENTS)
    latest = fill(log, clock, updates=2000, keys=50)
    log.roll()
    end = log.log_end_offset
    result = compact(log, first_uncleanable_offset=end, now_ms=clock.now_ms)
    assert result.bytes_after < result.bytes_before / 10
    assert log.log_end_offset == end
    assert read_all(log) == sorted((o, k, v) for k, (o, v) in latest.items())


def test_compressed_batches_are_cleaned_and_stay_compressed(open_log, clock):
    log = open_log(SMALL_SEGMENTS)
    latest = fill(log, clock, updates=500, keys=7, compression=LZ4, value_size=300)
    log.roll()
    compact(log, log.log_end_offset, clock.now_ms)
    assert read_all(log) == sorted((o, k, v) for k, (o, v) in latest.items())
    assert all(h.compression_type == LZ4 for s in log.segments for _, h in s.batch_headers())


def test_nothing_at_or_after_the_first_uncleanable_offset_is_touched(open_log, clock):
    log = open_log(SMALL_SEGMENTS)
    fill(log, clock, updates=300, keys=3)
    log.roll()
    before = read_all(log)
    compact(log, first_uncleanable_offset=0, now_ms=clock.now_ms)
    assert read_all(log) == before


def test_tombstones_stay_for_delete_retention_ms_then_go(open_log, clock):
    log = open_log(SMALL_SEGMENTS | {"delete.retention.ms": str(DAY_MS)})
    fill(log, clock, updates=100, keys=2)
    log.append_as_leader(keyed_batch([(b"k0", None)], clock.now_ms), 0)
    log.roll()
    compact(log, log.log_end_offset, clock.now_ms)
    assert [(k, v) for _, k, v in read_all(log)] == [(b"k1", b"v99"), (b"k0", None)]
    clock.now_ms += DAY_MS + 1
    compact(log, log.log_end_offset, clock.now_ms)
    assert [(k, v) for _, k, v in read_all(log)] == [(b"k1", b"v99")]


def test_idempotent_producer_state_survives_cleaning_and_reopening(open_log, clock):
    log = open_log(SMALL_SEGMENTS)
    for seq in range(0, 200, 10):
        pairs = [(b"k%d" % (i % 4), b"v%d" % i) for i in range(seq, seq + 10)]
        log.append_as_leader(keyed_batch(pairs, clock.now_ms, producer_id=7, base_sequence=seq), 0)
    log.roll()
    compact(log, log.log_end_offset, clock.now_ms)
    log.close()
    log = open_log(SMALL_SEGMENTS)
    retry = keyed_batch([(b"k0", b"v190")] * 10, clock.now_ms, producer_id=7, base_sequence=190)
    assert log.append_as_leader(retry, 0).duplicate  # the last batch is still recognised


def test_a_crash_during_cleaning_leaves_a_log_that_recovers(open_log, log_dir, clock):
    log = open_log(SMALL_SEGMENTS)
    latest = fill(log, clock, updates=400, keys=5)
    log.roll()
    compact(log, log.log_end_offset, clock.now_ms)
    (log_dir / f"{0:020d}.log{CLEANED_SUFFIX}").write_bytes(b"half a cleaned segment")
    crash(log)
    log = open_log(SMALL_SEGMENTS)
    assert not list(log_dir.glob(f"*{CLEANED_SUFFIX}"))
    assert read_all(log) == sorted((o, k, v) for k, (o, v) in latest.items())


def test_a_pass_starts_once_half_the_cleanable_bytes_are_new(open_log, clock):
    log = open_log(SMALL_SEGMENTS)  # min.cleanable.dirty.ratio defaults to 0.5
    cleaner = LogCleaner()
    fill(log, clock, updates=1000, keys=1000)  # distinct keys: cleaning keeps everything
    log.roll()
    assert cleaner.maybe_clean(log, log.log_end_offset, clock.now_ms) is not None
    assert cleaner.maybe_clean(log, log.log_end_offset, clock.now_ms) is None  # nothing new
    fill(log, clock, updates=300, keys=1000)
    log.roll()
    assert cleaner.maybe_clean(log, log.log_end_offset, clock.now_ms) is None  # 300/1300 dirty
    fill(log, clock, updates=1000, keys=1000)
    log.roll()
    assert cleaner.maybe_clean(log, log.log_end_offset, clock.now_ms) is not None


def test_records_younger_than_min_compaction_lag_are_not_cleaned(open_log, clock):
    log = open_log(SMALL_SEGMENTS | {"min.compaction.lag.ms": str(DAY_MS)})
    fill(log, clock, updates=300, keys=3)
    log.roll()
    before = read_all(log)
    assert compact(log, log.log_end_offset, clock.now_ms).segments == 0
    assert read_all(log) == before
    clock.now_ms += DAY_MS
    assert compact(log, log.log_end_offset, clock.now_ms).segments > 0
    assert len(read_all(log)) == 3


def test_a_log_past_max_compaction_lag_is_cleaned_below_the_dirty_ratio(open_log, clock):
    log = open_log(SMALL_SEGMENTS | {"max.compaction.lag.ms": str(DAY_MS)})
    cleaner = LogCleaner()
    fill(log, clock, updates=1000, keys=1000)
    log.roll()
    assert cleaner.maybe_clean(log, log.log_end_offset, clock.now_ms) is not None
    fill(log, clock, updates=300, keys=1000)
    log.roll()
    assert cleaner.maybe_clean(log, log.log_end_offset, clock.now_ms) is None  # 300/1300 dirty
    clock.now_ms += DAY_MS + 1
    assert cleaner.maybe_clean(log, log.log_end_offset, clock.now_ms) is not None


def test_the_active_segment_rolls_within_max_compaction_lag_so_it_can_be_cleaned(open_log, clock):
    log = open_log({"cleanup.policy": "compact", "max.compaction.lag.ms": "1000"})
    log.append_as_leader(keyed_batch([(b"k", b"v")], clock.now_ms), 0)
    assert not log.maybe_roll_on_time(clock.now_ms + 1000)
    assert log.maybe_roll_on_time(clock.now_ms + 1001)


def test_a_compacted_topic_refuses_a_batch_with_keyless_records(open_log):
    log = open_log({"cleanup.policy": "compact"})
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i, key in enumerate([b"a", None, b"c", None]):
        builder.append(i, timestamp=1_000, key=key, value=b"v", headers=[])
    with pytest.raises(RecordErrorsError) as refused:
        log.append_as_leader(bytes(builder.build()), 0)
    assert refused.value.errno == 87
    assert [index for index, _ in refused.value.record_errors] == [1, 3]
    assert (
        "Compacted topic cannot accept message without key in topic partition topic-0"
        in refused.value.record_errors[0][1]
    )
    assert log.log_end_offset == 0
