import pytest
from kafka.errors import InvalidProducerEpochError, OutOfOrderSequenceNumberError

from brokerd.storage.log_validator import stamp_batch
from brokerd.storage.producer_state import ProducerStateManager
from brokerd.storage.record_batch import INT32_MAX
from tests.brokerd.storage.conftest import make_batch

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
