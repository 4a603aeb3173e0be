"""The share-partition state machine (KIP-932) in-process: acquisition by whole batches,
acknowledgement types, delivery counts and their limit, lock expiry, the SPSO, and the
snapshot a new leader starts from."""

from __future__ import annotations

import pytest
from kafka.errors import InvalidRecordStateError, InvalidRequestError

from brokerd.share.share_partition import (
    ACCEPT,
    GAP,
    REJECT,
    RELEASE,
    Acknowledgement,
    AcquiredRecords,
    RecordState,
    ShareConfig,
    SharePartition,
    StateBatch,
)
from brokerd.share.share_state import ShareKey, ShareState

pytestmark = pytest.mark.unit

LOCK_MS = 1000
CONFIG = ShareConfig(record_lock_duration_ms=LOCK_MS, delivery_count_limit=3, max_record_locks=100)


def ack(first: int, last: int, *types: int) -> Acknowledgement:
    return Acknowledgement(first, last, list(types))


def test_a_fetch_acquires_whole_batches_from_the_end_offset() -> None:
    sp = SharePartition(CONFIG, 0)
    got = sp.acquire("m1", [(0, 4), (5, 9)], max_records=3, now_ms=0)
    assert got == [AcquiredRecords(0, 4, 1)]  # the budget is met within the first batch
    assert sp.end_offset == 5
    assert sp.next_fetch_offset() == 5
    assert sp.acquire("m2", [(5, 9)], max_records=10, now_ms=0) == [AcquiredRecords(5, 9, 1)]
    assert sp.acquired_count() == 10


def test_accepted_records_move_the_start_offset_and_are_never_delivered_again() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 9)], 100, 0)
    sp.acknowledge("m1", [ack(0, 4, ACCEPT)], 0)
    assert sp.start_offset == 5
    sp.acknowledge("m1", [ack(5, 9, ACCEPT)], 0)
    assert (sp.start_offset, sp.end_offset, sp.runs) == (10, 10, [])
    assert sp.acquire("m2", [(0, 9)], 100, 0) == []


def test_a_released_record_is_delivered_again_with_its_delivery_count_raised() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 2)], 100, 0)
    sp.acknowledge("m1", [ack(0, 2, ACCEPT, RELEASE, ACCEPT)], 0)
    assert sp.start_offset == 1
    assert sp.next_fetch_offset() == 1
    # the fetch reads the batch again; only the released record is acquired
    assert sp.acquire("m2", [(0, 2)], 100, 0) == [AcquiredRecords(1, 1, 2)]


def test_a_rejected_record_is_archived_and_never_delivered_again() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 2)], 100, 0)
    sp.acknowledge("m1", [ack(0, 2, RELEASE, REJECT, RELEASE)], 0)
    got = sp.acquire("m2", [(0, 2)], 100, 0)
    assert got == [AcquiredRecords(0, 0, 2), AcquiredRecords(2, 2, 2)]
    sp.acknowledge("m2", [ack(0, 0, ACCEPT), ack(2, 2, ACCEPT)], 0)
    assert sp.start_offset == 3 and sp.runs == []


def test_gaps_are_archived() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 3)], 100, 0)
    sp.acknowledge("m1", [ack(0, 3, ACCEPT, GAP, GAP, ACCEPT)], 0)
    assert sp.start_offset == 4


def test_the_delivery_count_limit_archives_a_record() -> None:
    sp = SharePartition(CONFIG, 0)
    for delivery in range(1, 4):
        assert sp.acquire("m1", [(0, 0)], 100, 0) == [AcquiredRecords(0, 0, delivery)]
        sp.acknowledge("m1", [ack(0, 0, RELEASE)], 0)
    assert sp.acquire("m1", [(0, 0)], 100, 0) == []
    assert sp.start_offset == 1


def test_an_expired_lock_makes_the_records_available_to_another_member() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 9)], 100, now_ms=0)
    assert sp.next_deadline_ms() == LOCK_MS
    assert sp.expire_locks(LOCK_MS - 1) == 0
    assert sp.expire_locks(LOCK_MS) == 10
    assert sp.next_deadline_ms() is None
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m1", [ack(0, 9, ACCEPT)], LOCK_MS)
    assert sp.acquire("m2", [(0, 9)], 100, LOCK_MS) == [AcquiredRecords(0, 9, 2)]


def test_a_split_run_keeps_its_lock() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 9)], 100, now_ms=0)
    sp.acknowledge("m1", [ack(3, 4, ACCEPT)], 0)
    assert sp.expire_locks(LOCK_MS) == 8
    assert [(r.first, r.last, r.state) for r in sp.runs] == [
        (0, 2, RecordState.AVAILABLE),
        (3, 4, RecordState.ACKNOWLEDGED),
        (5, 9, RecordState.AVAILABLE),
    ]


def test_only_the_member_holding_a_record_acknowledges_it_and_all_or_nothing() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 4)], 100, 0)
    sp.acquire("m2", [(5, 9)], 100, 0)
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m1", [ack(0, 4, ACCEPT), ack(5, 5, ACCEPT)], 0)
    assert sp.start_offset == 0  # the first batch was not applied either
    with pytest.raises(InvalidRequestError):
        sp.acknowledge("m1", [ack(0, 4, ACCEPT, ACCEPT)], 0)
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("m1", [ack(20, 21, ACCEPT)], 0)


def test_releasing_a_member_returns_what_it_holds() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 4)], 100, 0)
    sp.acquire("m2", [(5, 9)], 100, 0)
    assert sp.release_member("m1") == 5
    assert sp.next_fetch_offset() == 0
    assert sp.acquire("m3", [(0, 4), (5, 9)], 100, 0) == [AcquiredRecords(0, 4, 2)]


def test_the_record_lock_limit_bounds_what_is_in_flight() -> None:
    sp = SharePartition(ShareConfig(LOCK_MS, 5, max_record_locks=10), 0)
    assert sp.acquire("m1", [(0, 7), (8, 15)], 100, 0) == [AcquiredRecords(0, 9, 1)]
    assert sp.next_fetch_offset() is None
    sp.acknowledge("m1", [ack(0, 3, ACCEPT)], 0)
    assert sp.next_fetch_offset() == 10


def test_a_snapshot_restores_acknowledged_state_and_delivery_counts() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 9)], 100, 0)
    sp.acknowledge("m1", [ack(0, 1, ACCEPT), ack(2, 2, RELEASE), ack(3, 3, REJECT), ack(4, 4, ACCEPT)], 0)
    batches = sp.state_batches()
    assert batches == [
        StateBatch(2, 2, 0, 1),
        StateBatch(3, 3, 4, 1),
        StateBatch(4, 4, 2, 1),
        StateBatch(5, 9, 0, 1),
    ]
    restored = SharePartition(CONFIG, sp.start_offset, batches)
    assert restored.start_offset == 2 and restored.end_offset == 10
    # what was acquired but not acknowledged is delivered again; accepted records never
    got = restored.acquire("m2", [(0, 9)], 100, 0)
    assert got == [AcquiredRecords(2, 2, 2), AcquiredRecords(5, 9, 2)]


def test_retention_moves_the_start_offset() -> None:
    sp = SharePartition(CONFIG, 0)
    sp.acquire("m1", [(0, 9)], 100, 0)
    sp.move_start_to(5)
    assert sp.start_offset == 5
    assert sp.expire_locks(LOCK_MS) == 5
    assert sp.acquire("m2", [(5, 9)], 100, LOCK_MS) == [AcquiredRecords(5, 9, 2)]


def test_a_persisted_state_reads_back_and_an_older_leader_never_replaces_a_newer_one() -> None:
    state = ShareState(7, 3, (StateBatch(7, 9, 2, 1), StateBatch(10, 10, 0, 2)))
    assert ShareState.decode(state.encode()) == state
    key = ShareKey("g", "00ff", 2)
    assert ShareKey.decode(key.encode()) == key
    assert ShareKey.decode(b"not json") is None
    assert ShareState(9, 2).supersedes(state) is False
    assert ShareState(9, 3).supersedes(state) is True
    reset = ShareState(0, 1, (), state_epoch=1)  # an admin reset, whatever the leader epoch
    assert reset.supersedes(state) and not state.supersedes(reset)
    assert ShareState.decode(ShareState(0, 0, (), 2, deleted=True).encode()).deleted
    with pytest.raises(ValueError):
        ShareState.decode(b"garbage")
