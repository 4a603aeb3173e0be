"""Crash recovery: whatever a crash leaves on disk, the log reopens with every batch before the damage."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from brokerd.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from brokerd.storage.log_loader import RECOVERY_POINT_CHECKPOINT
from brokerd.storage.log_validator import stamp_batch
from brokerd.storage.record_batch import iter_batch_headers
from tests.brokerd.storage.conftest import crash, make_batch, records

pytestmark = pytest.mark.unit

SMALL = {"segment.bytes": "4096", "index.interval.bytes": "512"}


def fill(log, batches, epoch=0):
    for i in range(batches):
        log.append_as_leader(make_batch(5, prefix=f"b{i}", value_size=40), epoch)


def all_bytes(log, upper_bound_offset=None):
    """Every batch from the log start, fetched segment by segment as a consumer would."""
    end = log.log_end_offset if upper_bound_offset is None else upper_bound_offset
    offset, data = log.log_start_offset, b""
    while offset < end:
        fetched = bytes(log.read(offset, 1 << 30, upper_bound_offset=end))
        data += fetched
        offset = list(iter_batch_headers(fetched, 0, len(fetched)))[-1][1].next_offset
    return data


def write_into_active_segment(log, position, data):
    with open(log.segments[-1].path, "r+b") as file:
        file.seek(position)
        file.write(data)


def test_a_crash_loses_nothing_that_was_written(open_log):
    log = open_log(SMALL)
    fill(log, 40)
    expected = all_bytes(log)
    crash(log)
    reopened = open_log(SMALL)
    assert reopened.log_end_offset == 200 and all_bytes(reopened) == expected
    fill(reopened, 1)
    assert reopened.log_end_offset == 205


def test_garbage_after_the_last_batch_is_cut_off(open_log):
    log = open_log(SMALL)
    fill(log, 40)
    expected, end = all_bytes(log), log.segments[-1].size
    crash(log)
    write_into_active_segment(log, end, os.urandom(300))
    reopened = open_log(SMALL)
    assert reopened.log_end_offset == 200 and all_bytes(reopened) == expected


def test_a_torn_batch_is_cut_off_and_its_offsets_reused(open_log):
    log = open_log(SMALL)
    fill(log, 40)
    expected, end = all_bytes(log), log.segments[-1].size
    crash(log)
    torn, _ = stamp_batch(make_batch(5, value_size=40), 200, 0)
    write_into_active_segment(log, end, torn[: len(torn) // 2])
    reopened = open_log(SMALL)
    assert reopened.log_end_offset == 200 and all_bytes(reopened) == expected
    fill(reopened, 2)
    assert [offset for offset, _, _ in records(reopened.read(195, 1 << 20))] == list(range(195, 210))


def test_a_corrupt_batch_in_the_middle_ends_the_log_there(open_log):
    log = open_log(SMALL)
    fill(log, 40)
    active = log.segments[-1]
    positions = [position for position, _ in active.batch_headers()]
    kept_until = next(h.base_offset for _, h in active.batch_headers()) + 5 * (len(positions) // 2)
    expected = all_bytes(log, upper_bound_offset=kept_until)
    crash(log)
    write_into_active_segment(log, positions[len(positions) // 2] + 70, b"\xff")
    reopened = open_log(SMALL)
    assert reopened.log_end_offset == kept_until
    assert all_bytes(reopened) == expected


def test_without_a_recovery_point_every_segment_is_checked_and_later_ones_dropped(open_log, log_dir):
    log = open_log(SMALL)
    fill(log, 60)
    second = log.segments[1]
    expected = all_bytes(log, upper_bound_offset=second.base_offset)
    crash(log)
    (log_dir / RECOVERY_POINT_CHECKPOINT).unlink()
    with open(second.path, "r+b") as file:
        file.seek(100)
        file.write(b"\x00\x01")
    reopened = open_log(SMALL)
    assert reopened.log_end_offset == second.base_offset
    assert [segment.size > 0 for segment in reopened.segments] == [True, False]
    assert all_bytes(reopened) == expected


def test_missing_indexes_and_epoch_checkpoint_are_rebuilt(open_log, log_dir):
    log = open_log(SMALL)
    for epoch in range(6):
        fill(log, 10, epoch=epoch)
    log.close()
    index_bytes = {p.name: p.read_bytes() for p in log_dir.glob("*index")}
    epochs = LeaderEpochFileCache(log_dir).entries
    for path in [*log_dir.glob("*index"), log_dir / LEADER_EPOCH_CHECKPOINT]:
        path.unlink()
    reopened = open_log(SMALL)
    reopened.close()
    assert {p.name: p.read_bytes() for p in log_dir.glob("*index")} == index_bytes
    assert LeaderEpochFileCache(log_dir).entries == epochs


def test_a_corrupt_index_is_rebuilt(open_log, log_dir):
    log = open_log(SMALL)
    fill(log, 60)
    expected = all_bytes(log)
    log.close()
    first_index = sorted(log_dir.glob("*.index"))[0]
    first_index.write_bytes(bytes(64))
    reopened = open_log(SMALL)
    assert all_bytes(reopened) == expected
    assert reopened.segments[0].offset_index.entries > 0


def test_leftovers_and_orphan_index_files_are_removed(open_log, log_dir):
    open_log(SMALL).close()
    for name in [
        "00000000000000000042.index",
        "00000000000000000042.timeindex",
        "x.deleted",
        "leader-epoch-checkpoint.tmp",
    ]:
        (log_dir / name).write_bytes(b"junk")
    open_log(SMALL)
    assert sorted(p.name for p in log_dir.iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        RECOVERY_POINT_CHECKPOINT,
    ]


def test_opening_a_small_log_after_a_crash_is_fast(open_log):
    log = open_log(SMALL)
    for producer in range(3):
        for i in range(100):
            log.append_as_leader(
                make_batch(5, producer_id=producer, producer_epoch=0, base_sequence=5 * i), i % 4
            )
    crash(log)
    started = time.perf_counter()
    reopened = open_log(SMALL)
    assert time.perf_counter() - started < 0.25
    assert reopened.log_end_offset == 1500


PRODUCER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from brokerd.storage.log_config import LogConfig
    from brokerd.storage.partition_log import PartitionLog
    from tests.brokerd.storage.conftest import make_batch

    log = PartitionLog.open(Path(sys.argv[1]), LogConfig.from_configs({"segment.bytes": "65536"}))
    i = 0
    while True:
        info = log.append_as_leader(make_batch(4, prefix=f"b{i}", value_size=30, timestamp=i), 0)
        print(info.last_offset, flush=True)
        i += 1
""")


def test_every_acknowledged_batch_survives_sigkill(open_log, log_dir):
    child = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, str(log_dir)], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        acknowledged = [int(child.stdout.readline()) for _ in range(3000)]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    log = open_log({"segment.bytes": "65536"})
    assert log.log_start_offset == 0 and log.log_end_offset >= acknowledged[-1] + 1
    assert len(log.segments) > 3
    for i, last_offset in enumerate(acknowledged):
        batch, _ = stamp_batch(make_batch(4, prefix=f"b{i}", value_size=30, timestamp=i), last_offset - 3, 0)
        assert bytes(log.read(last_offset, 1))[: len(batch)] == batch


def test_a_smaller_segment_index_bytes_only_makes_indexes_sparser(open_log):
    log = open_log(SMALL)
    fill(log, 30)
    expected = all_bytes(log)
    crash(log)
    shrunk = {**SMALL, "segment.index.bytes": "16"}
    reopened = open_log(shrunk)
    assert all_bytes(reopened) == expected
    fill(reopened, 30)
    assert [offset for offset, _, _ in records(all_bytes(reopened))] == list(range(300))


def test_after_a_clean_shutdown_batches_are_not_revalidated(open_log):
    log = open_log(SMALL)
    fill(log, 40)
    log.close()
    with open(log.segments[-1].path, "r+b") as file:
        file.seek(100)
        file.write(b"\xff")  # only a full recovery, which a clean shutdown skips, would notice
    assert open_log(SMALL).log_end_offset == 200
