"""Transactions in the log: open transactions, the LSO, ``.txnindex`` files, markers and fencing."""

import struct

import pytest
from kafka.errors import InvalidProducerEpochError, InvalidTxnStateError, TransactionCoordinatorFencedError

from brokerd.partition import Partition
from brokerd.state import PartitionRegistration
from brokerd.storage.log_config import LogConfig
from brokerd.storage.partition_log import PartitionLog
from brokerd.storage.transaction_index import AbortedTxn
from tests.brokerd.storage.conftest import crash, make_batch, records

pytestmark = pytest.mark.unit

SMALL = {"segment.bytes": "4096", "index.interval.bytes": "512"}
A, B = 4000, 5000


class Producer:
    """A transactional producer's batches for one partition, numbered as a client would."""

    def __init__(self, log, pid, epoch=0):
        self.log, self.pid, self.epoch, self.sequence = log, pid, epoch, 0

    def send(self, count=3, value_size=0):
        batch = make_batch(
            count,
            prefix=f"p{self.pid}",
            value_size=value_size,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            transactional=True,
        )
        self.sequence += count
        return self.log.append_as_leader(batch, 0)

    def end(self, commit, epoch=None, coordinator_epoch=0):
        return self.log.append_txn_marker(
            self.pid, self.epoch if epoch is None else epoch, commit, coordinator_epoch, 0
        )


def plain(log, count=2, value_size=0):
    return log.append_as_leader(make_batch(count, value_size=value_size), 0)


def txnindex_entries(path):
    return [AbortedTxn(*fields[1:]) for fields in struct.iter_unpack(">hqqqq", path.read_bytes())]


def test_open_transactions_hold_the_first_unstable_offset(open_log):
    log = open_log()
    a, b = Producer(log, A), Producer(log, B)
    plain(log)  # 0-1
    a.send()  # 2-4
    b.send()  # 5-7
    a.send()  # 8-10
    assert log.first_unstable_offset == 2
    assert log.open_transactions() == [
        {"producer_id": A, "producer_epoch": 0, "first_offset": 2},
        {"producer_id": B, "producer_epoch": 0, "first_offset": 5},
    ]
    assert a.end(commit=True).first_offset == 11
    assert log.first_unstable_offset == 5
    b.end(commit=False)
    assert log.first_unstable_offset is None and log.open_transactions() == []


def test_an_abort_is_indexed_in_kafkas_txnindex_format(open_log, log_dir):
    log = open_log()
    a, b = Producer(log, A), Producer(log, B)
    a.send()  # 0-2
    b.send()  # 3-5
    a.end(commit=False)  # 6
    b.end(commit=True)  # 7
    path = log_dir / "00000000000000000000.txnindex"
    # version 0, producer id, first offset, marker offset, LSO once aborted (B still open at 3)
    assert path.read_bytes() == struct.pack(">hqqqq", 0, A, 0, 6, 3)
    assert log.aborted_transactions(0, 8) == [(A, 0)]


def abort_a_then_end_b(log, b_commits):
    """A aborts offsets 0-2 with its marker at 3, then B ends offsets 4-6 with its marker at 7."""
    a, b = Producer(log, A), Producer(log, B)
    a.send()
    a.end(commit=False)
    b.send()
    b.end(commit=b_commits)
    return a, b


def test_aborted_transactions_are_those_overlapping_the_range(open_log):
    log = open_log()
    a, b = abort_a_then_end_b(log, b_commits=True)
    a.send()  # 8-10
    b.send()  # 11-13
    a.end(commit=False)  # 14
    b.end(commit=False)  # 15
    assert log.aborted_transactions(0, 3) == [(A, 0)]
    assert log.aborted_transactions(3, 4) == [(A, 0)]
    assert log.aborted_transactions(4, 8) == []
    assert log.aborted_transactions(4, 12) == [(A, 8), (B, 11)]
    assert log.aborted_transactions(15, 16) == [(B, 11)]
    assert log.aborted_transactions(16, 100) == []


def test_an_abort_is_indexed_where_its_marker_lands_and_found_from_earlier_offsets(open_log, log_dir):
    log = open_log(SMALL)
    a = Producer(log, A)
    first = a.send(value_size=100).first_offset
    for _ in range(20):
        plain(log, 10, value_size=40)
    marker = a.end(commit=False).first_offset
    assert len(log.segments) > 2
    marker_segment = log.segments[-1]
    assert marker_segment.txn_index.entries == [AbortedTxn(A, first, marker, marker + 1)]
    assert [p.name for p in log_dir.glob("*.txnindex")] == [marker_segment.txn_index.path.name]
    assert log.aborted_transactions(first, first + 1) == [(A, first)]
    assert log.aborted_transactions(marker + 1, marker + 2) == []
    log.close()
    reopened = open_log(SMALL)
    assert reopened.aborted_transactions(first + 1, first + 2) == [(A, first)]
    assert reopened.aborted_transactions(marker, marker + 1) == [(A, first)]


def test_an_aborted_transaction_without_records_here_covers_its_marker(open_log):
    log = open_log()
    plain(log)
    Producer(log, A).end(commit=False)
    assert log.aborted_transactions(0, 3) == [(A, 2)]


def test_an_older_marker_epoch_is_refused_and_a_newer_one_fences_the_producer(open_log):
    log = open_log()
    zombie = Producer(log, A, epoch=2)
    zombie.send()
    with pytest.raises(InvalidProducerEpochError):
        zombie.end(commit=False, epoch=1)
    zombie.end(commit=False, epoch=3)  # the coordinator fenced the producer and aborted its transaction
    assert log.first_unstable_offset is None
    end = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError):
        zombie.send()
    assert log.log_end_offset == end
    successor = Producer(log, A, epoch=3)
    assert successor.send().first_offset == end


def test_a_marker_from_a_deposed_coordinator_is_refused_also_after_a_restart(open_log):
    log = open_log()
    producer = Producer(log, A)
    producer.send()
    producer.end(commit=True, coordinator_epoch=3)
    producer.send()
    log.close()
    log = open_log()
    producer.log = log
    end = log.log_end_offset
    with pytest.raises(TransactionCoordinatorFencedError):
        producer.end(commit=True, coordinator_epoch=2)
    assert log.log_end_offset == end and log.first_unstable_offset == 4
    producer.end(commit=False, coordinator_epoch=4)
    assert log.first_unstable_offset is None


def test_a_non_transactional_batch_in_an_open_transaction_is_refused(open_log):
    log = open_log()
    Producer(log, A).send()
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(make_batch(1, producer_id=A, producer_epoch=0, base_sequence=3), 0)


def test_truncation_removes_aborts_after_it_and_reopens_their_transactions(open_log, log_dir):
    log = open_log()
    abort_a_then_end_b(log, b_commits=False)
    log.truncate_to(7)
    path = log_dir / "00000000000000000000.txnindex"
    assert txnindex_entries(path) == [AbortedTxn(A, 0, 3, 4)]
    assert log.open_transactions() == [{"producer_id": B, "producer_epoch": 0, "first_offset": 4}]
    log.truncate_to(3)
    assert not path.exists() and log.aborted_transactions(0, 10) == []
    assert log.first_unstable_offset == 0


def test_retention_deletes_the_txnindex_with_its_segment(open_log, log_dir, clock):
    log = open_log({**SMALL, "retention.ms": "1000"})
    a = Producer(log, A)
    a.send(value_size=100)
    a.end(commit=False)
    for _ in range(20):
        plain(log, 10, value_size=40)
    assert len(list(log_dir.glob("*.txnindex"))) == 1
    clock.now_ms += 10**7
    log.delete_retained_segments()
    assert list(log_dir.glob("*.txnindex")) == []
    assert log.aborted_transactions(log.log_start_offset, log.log_end_offset) == []


def test_an_open_transaction_survives_expiry_and_retention(open_log, clock):
    log = open_log({**SMALL, "retention.ms": "1000"})
    Producer(log, A).send(value_size=100)
    for _ in range(20):
        plain(log, 10, value_size=40)
    clock.now_ms += 10**11
    log.delete_retained_segments()
    assert log.open_transactions()[0]["first_offset"] == 0
    assert log.first_unstable_offset == log.log_start_offset > 0


def make_transactions(log):
    a, b = Producer(log, A), Producer(log, B)
    for i in range(12):
        a.send(value_size=60)
        b.send(value_size=60)
        a.end(commit=i % 3 == 0)
        if i % 2:
            b.end(commit=False)
    return a, b


def test_everything_is_rebuilt_from_the_log_after_an_unclean_shutdown(open_log, log_dir):
    log = open_log(SMALL)
    make_transactions(log)
    files = {p.name: p.read_bytes() for p in log_dir.glob("*.txnindex")}
    expected = (log.open_transactions(), log.first_unstable_offset, log.aborted_transactions(0, 10**6))
    assert len(files) > 1 and len(expected[2]) == 8 + 6
    crash(log)
    damaged = sorted(files)
    (log_dir / damaged[0]).unlink()
    (log_dir / damaged[-1]).write_bytes(files[damaged[-1]][:-10])
    reopened = open_log(SMALL)
    assert {p.name: p.read_bytes() for p in log_dir.glob("*.txnindex")} == files
    assert (
        reopened.open_transactions(),
        reopened.first_unstable_offset,
        reopened.aborted_transactions(0, 10**6),
    ) == expected


def test_recovery_cutting_an_abort_marker_drops_its_entry(open_log, log_dir):
    log = open_log()
    a = Producer(log, A)
    a.send()
    marker = a.end(commit=False).first_offset
    position = log.segments[-1].size - 1
    crash(log)
    with open(log_dir / "00000000000000000000.log", "r+b") as file:
        file.seek(position)
        file.write(b"\xff")  # the marker's CRC no longer matches
    reopened = open_log()
    assert reopened.log_end_offset == marker
    assert not (log_dir / "00000000000000000000.txnindex").exists()
    assert reopened.first_unstable_offset == 0


def test_a_clean_restart_keeps_transactions(open_log):
    log = open_log(SMALL)
    make_transactions(log)
    expected = (log.open_transactions(), log.aborted_transactions(0, 10**6))
    log.close()
    reopened = open_log(SMALL)
    assert (reopened.open_transactions(), reopened.aborted_transactions(0, 10**6)) == expected


def test_a_follower_builds_the_same_transaction_state(open_log, tmp_path, clock):
    leader = open_log(SMALL)
    make_transactions(leader)
    follower = PartitionLog.open(tmp_path / "follower-0", LogConfig.from_configs(SMALL), time=clock)
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 700))
    assert follower.open_transactions() == leader.open_transactions()
    assert follower.first_unstable_offset == leader.first_unstable_offset
    assert follower.aborted_transactions(0, 10**6) == leader.aborted_transactions(0, 10**6)
    assert [(s.base_offset, s.txn_index.entries) for s in follower.segments] == [
        (s.base_offset, s.txn_index.entries) for s in leader.segments
    ]


def test_only_the_first_batch_may_exceed_max_bytes_when_asked(open_log):
    log = open_log()
    log.append_as_leader(make_batch(3, value_size=500), 0)
    assert len(log.read(0, 100)) > 100
    assert len(log.read(0, 100, min_one_message=False)) == 0
    assert [offset for offset, _, _ in records(log.read(0, 2000, min_one_message=False))] == [0, 1, 2]


def test_a_partition_serves_read_committed_consumers_up_to_the_last_stable_offset(open_log):
    partition = Partition(1, "topic", 0, open_log(), lambda *_: None)
    partition.update(PartitionRegistration(0, [1], leader=1, leader_epoch=0, isr=[1]))
    log = partition.log
    plain(log)  # 0-1
    Producer(log, A).send()  # 2-4
    partition.append_as_leader(make_batch(2), acks=1)  # 5-6, moves the high watermark
    assert (partition.high_watermark, partition.last_stable_offset) == (7, 2)
    assert [offset for offset, _, _ in records(partition.read(0, 10**6, read_committed=True))] == [0, 1]
    assert len(records(partition.read(0, 10**6))) == 7
    status = partition.status()
    assert status["last_stable_offset"] == 2
    assert status["open_transactions"] == [{"producer_id": A, "producer_epoch": 0, "first_offset": 2}]
    info = partition.append_txn_marker(A, 0, True, 0)
    assert info.first_offset == 7 and partition.last_stable_offset == partition.high_watermark == 8
