from kafka.record.default_records import DefaultRecordBatch

from brokerd.storage import ABORT, COMMIT, build_end_txn_marker, control_record_type, read_header
from tests.brokerd.storage.conftest import make_batch


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


def test_the_control_record_type_is_read_from_the_key():
    assert control_record_type(build_end_txn_marker(1, 0, True, 0, 0), 0) == COMMIT
    commit_then_abort = build_end_txn_marker(1, 0, True, 0, 0) + build_end_txn_marker(1, 0, False, 0, 0)
    assert control_record_type(commit_then_abort, len(commit_then_abort) // 2) == ABORT


def test_an_unreadable_control_record_has_no_type():
    marker = build_end_txn_marker(1, 0, True, 0, 0)
    assert control_record_type(marker[:65], 0) == -1
    assert control_record_type(make_batch(1, value_size=0, prefix=""), 0) == -1
