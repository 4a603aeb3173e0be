import pytest
from kafka.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceNumberError,
    TransactionCoordinatorFencedError,
)

from brokerd.storage.control_batch import build_end_txn_marker
from brokerd.storage.log_validator import stamp_batch
from brokerd.storage.producer_state import ProducerStateManager
from brokerd.storage.record_batch import INT32_MAX
from tests.brokerd.storage.conftest import make_batch

pytestmark = pytest.mark.unit

PID = 4000


def header(sequence, count=2, epoch=0, offset=0):
    batch = make_batch(count, producer_id=PID, producer_epoch=epoch, base_sequence=sequence)
    return stamp_batch(batch, offset, 0)[1]


@pytest.fixture
def state():
    manager = ProducerStateManager()
    for i in range(6):
        manager.update(header(2 * i, offset=100 + 2 * i))
    return manager


def test_an_unknown_producer_may_start_anywhere():
    assert ProducerStateManager().check(header(77)) is None


def test_the_next_sequence_is_accepted(state):
    assert state.check(header(12)) is None


def test_a_retry_of_a_recent_batch_is_a_duplicate_with_its_original_offsets(state):
    duplicate = state.check(header(10))
    assert (duplicate.first_offset, duplicate.last_offset) == (110, 111)
    assert state.check(header(2)).first_offset == 102


def test_a_batch_older_than_the_last_five_is_out_of_order(state):
    with pytest.raises(OutOfOrderSequenceNumberError):
        state.check(header(0))


def test_a_gap_is_out_of_order(state):
    with pytest.raises(OutOfOrderSequenceNumberError, match="expected 12"):
        state.check(header(14))


def test_a_fenced_epoch_is_rejected(state):
    state.update(header(0, epoch=1, offset=200))
    with pytest.raises(InvalidProducerEpochError):
        state.check(header(12, epoch=0))


def test_a_new_epoch_starts_at_sequence_zero(state):
    assert state.check(header(0, epoch=1)) is None
    with pytest.raises(OutOfOrderSequenceNumberError, match="sequence 0"):
        state.check(header(12, epoch=1))


def test_sequences_wrap_after_int32_max():
    manager = ProducerStateManager()
    manager.update(header(INT32_MAX - 1, offset=10))
    assert manager.check(header(0)) is None


def test_producers_whose_batches_are_gone_are_forgotten(state):
    state.truncate_head(112)
    assert state.entry(PID) is None


def txn_header(sequence, offset, pid=PID, epoch=0, count=2):
    batch = make_batch(
        count, producer_id=pid, producer_epoch=epoch, base_sequence=sequence, transactional=True
    )
    return stamp_batch(batch, offset, 0)[1]


def marker_header(offset, pid=PID, epoch=0):
    return stamp_batch(build_end_txn_marker(pid, epoch, False, 0, 1_000_000), offset, 0)[1]


def test_a_transactional_batch_opens_a_transaction_that_later_batches_continue():
    manager = ProducerStateManager()
    manager.update(txn_header(0, 10))
    manager.update(txn_header(0, 12, pid=PID + 1))
    manager.update(txn_header(2, 14))
    assert manager.first_unstable_offset == 10
    assert manager.open_transactions() == [
        {"producer_id": PID, "producer_epoch": 0, "first_offset": 10},
        {"producer_id": PID + 1, "producer_epoch": 0, "first_offset": 12},
    ]


def test_a_marker_closes_the_transaction_and_reports_the_next_stable_offset():
    manager = ProducerStateManager()
    manager.update(txn_header(0, 10))
    manager.update(txn_header(0, 12, pid=PID + 1))
    assert manager.complete_txn(marker_header(14), 0) == (10, 12)
    assert manager.first_unstable_offset == 12
    assert manager.complete_txn(marker_header(15, pid=PID + 1), 0) == (12, 16)
    assert manager.first_unstable_offset is None and manager.open_transactions() == []


def test_a_marker_without_a_transaction_covers_only_itself():
    assert ProducerStateManager().complete_txn(marker_header(30), 0) == (30, 31)


def test_a_marker_with_a_newer_epoch_fences_the_old_one_but_not_its_sequences():
    manager = ProducerStateManager()
    manager.update(txn_header(0, 10))
    manager.complete_txn(marker_header(12, epoch=1), 0)
    with pytest.raises(InvalidProducerEpochError):
        manager.check(txn_header(2, 0))
    with pytest.raises(InvalidProducerEpochError):
        manager.check_marker(PID, 0, 0)
    with pytest.raises(OutOfOrderSequenceNumberError):
        manager.check(txn_header(2, 0, epoch=1))
    assert manager.check(txn_header(0, 0, epoch=1)) is None


def test_a_non_transactional_batch_inside_a_transaction_is_refused():
    manager = ProducerStateManager()
    manager.update(txn_header(0, 10))
    with pytest.raises(InvalidTxnStateError):
        manager.check(header(2))


def test_expiry_and_head_truncation_keep_producers_with_open_transactions():
    manager = ProducerStateManager()
    manager.update(txn_header(0, 10))
    manager.update(txn_header(0, 14, pid=PID + 1))
    manager.complete_txn(marker_header(16, pid=PID + 1), 0)
    manager.truncate_head(100)
    manager.remove_expired(10**12)
    assert manager.entry(PID) is not None and manager.first_unstable_offset == 10
    assert manager.entry(PID + 1) is None


def test_a_marker_from_an_older_coordinator_epoch_is_fenced():
    manager = ProducerStateManager()
    manager.update(txn_header(0, 10))
    manager.complete_txn(marker_header(12), 5)
    with pytest.raises(TransactionCoordinatorFencedError):
        manager.check_marker(PID, 0, 4)
    manager.check_marker(PID, 0, 5)
    manager.check_marker(PID, 0, 6)
