"""The log start offset DeleteRecords moves: unreadable below it, checkpointed, segments freed."""

import pytest
from kafka.errors import OffsetOutOfRangeError

from brokerd.storage.partition_log import LOG_START_OFFSET_CHECKPOINT
from tests.brokerd.storage.conftest import make_batch, records

pytestmark = pytest.mark.unit

SMALL = {"segment.bytes": "4096", "index.interval.bytes": "512"}


def produce(log, batches, count=7):
    for i in range(batches):
        log.append_as_leader(make_batch(count, prefix=f"b{i}", value_size=40), 0)


def test_moving_the_start_hides_earlier_records_and_deletes_whole_segments(open_log):
    log = open_log(SMALL)
    produce(log, 60)
    before = len(log.segments)
    assert log.maybe_increment_log_start_offset(200)
    assert log.log_start_offset == 200
    assert all(segment.next_offset > 200 for segment in log.segments)
    assert len(log.segments) < before
    assert log.segments[0].base_offset < 200  # the segment holding 200 stays, partly unreadable
    with pytest.raises(OffsetOutOfRangeError):
        log.read(199, 1000)
    assert records(log.read(200, 1000))[-1][0] >= 200
    assert not log.maybe_increment_log_start_offset(150)  # never backwards
    assert log.log_start_offset == 200


def test_the_start_survives_a_restart_and_a_crash(open_log, log_dir):
    log = open_log(SMALL)
    produce(log, 20)
    log.maybe_increment_log_start_offset(61)
    log.close()
    assert (log_dir / LOG_START_OFFSET_CHECKPOINT).exists()
    reopened = open_log(SMALL)
    assert reopened.log_start_offset == 61
    with pytest.raises(OffsetOutOfRangeError):
        reopened.read(60, 1000)


def test_moving_the_start_to_the_log_end_keeps_the_end(open_log):
    log = open_log(SMALL)
    produce(log, 5)
    end = log.log_end_offset
    log.maybe_increment_log_start_offset(end)
    assert (log.log_start_offset, log.log_end_offset) == (end, end)
    assert [segment.base_offset for segment in log.segments] == [end]
    log.append_as_leader(make_batch(3), 0)
    assert [r[0] for r in records(log.read(end, 1000))] == [end, end + 1, end + 2]


def test_beyond_the_log_end_is_out_of_range(open_log):
    log = open_log()
    produce(log, 1)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(8)


def test_a_follower_starting_over_keeps_the_leaders_start(open_log):
    log = open_log(SMALL)
    produce(log, 2)
    log.truncate_fully_and_start_at(500)
    log.close()
    assert open_log(SMALL).log_start_offset == 500
