import pytest
from kafka.record.default_records import DefaultRecordBatch

from brokerd.storage.control_batch import COMMIT, EndTxnMarker, build_end_txn_marker, read_end_txn_marker
from brokerd.storage.record_batch import read_header
from tests.brokerd.storage.conftest import make_batch

pytestmark = pytest.mark.unit


def test_an_end_txn_marker_is_a_control_batch_clients_decode():
    marker = build_end_txn_marker(4000, 3, True, 7, 1_700_000_000_000)
    batch = DefaultRecordBatch(marker)
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    assert (batch.base_offset, batch.producer_id, batch.producer_epoch) == (0, 4000, 3)
    [record] = list(batch)
    assert (record.offset, record.timestamp, record.type) == (0, 1_700_000_000_000, COMMIT)


def test_the_marker_value_is_version_0_and_the_coordinator_epoch():
    marker = build_end_txn_marker(4000, 3, False, 0x01020304, 5)
    header = read_header(marker)
    assert (header.records_count, header.last_offset_delta, header.base_sequence) == (1, 0, -1)
    # valueLength 6 (zigzag 12), version 0, coordinator epoch, no headers
    assert marker[-8:] == bytes([12, 0, 0, 1, 2, 3, 4, 0])


def test_the_marker_type_and_coordinator_epoch_are_read_back():
    assert read_end_txn_marker(build_end_txn_marker(1, 0, True, 9, 0), 0) == EndTxnMarker(True, 9)
    commit_then_abort = build_end_txn_marker(1, 0, True, 0, 0) + build_end_txn_marker(1, 0, False, 70000, 0)
    assert read_end_txn_marker(commit_then_abort, len(commit_then_abort) // 2) == EndTxnMarker(False, 70000)


def test_an_unreadable_control_record_is_no_marker():
    marker = build_end_txn_marker(1, 0, True, 0, 0)
    assert read_end_txn_marker(marker[:65], 0) is None
    assert read_end_txn_marker(make_batch(1, value_size=0, prefix=""), 0) is None
