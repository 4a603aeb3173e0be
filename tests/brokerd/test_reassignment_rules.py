"""The reassignment procedure on a partition record, as pure functions."""

import pytest
from kafka.errors import NoReassignmentInProgressError

from brokerd import reassignment
from brokerd.metadata.registration import PartitionChangeBuilder, PartitionRegistration

pytestmark = pytest.mark.unit


def partition(replicas, isr, leader=None):
    return PartitionChangeBuilder.of(
        PartitionRegistration(
            0, list(replicas), leader=replicas[0] if leader is None else leader, isr=list(isr)
        )
    )


def test_old_replicas_stay_until_every_target_replica_is_in_sync():
    record = partition([1, 2], [1, 2])
    reassignment.start(record, [3, 1])
    assert (record.replicas, record.adding_replicas, record.removing_replicas) == ([3, 1, 2], [3], [2])
    assert record.isr == [1, 2]
    assert not reassignment.maybe_complete(record)  # 3 has not caught up
    assert record.replicas == [3, 1, 2]
    record.isr = [1, 2, 3]  # the leader added it once it caught up
    assert reassignment.maybe_complete(record)
    assert (record.replicas, record.isr, record.adding_replicas, record.removing_replicas) == (
        [3, 1],
        [1, 3],
        [],
        [],
    )


def test_every_step_bumps_the_partition_epoch_so_stale_isr_updates_are_refused():
    record = partition([1, 2], [1, 2])
    reassignment.start(record, [2, 3])
    record.isr = [1, 2, 3]
    reassignment.maybe_complete(record)
    assert record.partition_epoch == 2


def test_a_removed_leader_leaves_the_isr_so_the_controller_elects_one_from_the_target():
    record = partition([1, 2], [1, 2], leader=1)
    reassignment.start(record, [2, 3])
    record.isr = [1, 2, 3]
    reassignment.maybe_complete(record)
    assert record.leader not in record.isr


def test_cancel_restores_the_original_replicas_and_drops_the_added_ones():
    record = partition([1, 2], [1, 2])
    reassignment.start(record, [3, 4])
    record.isr = [1, 2, 3]
    reassignment.cancel(record)
    assert (record.replicas, record.isr, record.adding_replicas, record.removing_replicas) == (
        [1, 2],
        [1, 2],
        [],
        [],
    )
    with pytest.raises(NoReassignmentInProgressError):
        reassignment.cancel(record)


def test_a_new_target_replaces_an_ongoing_reassignment():
    record = partition([1, 2], [1, 2])
    reassignment.start(record, [3, 1])
    reassignment.start(record, [4, 1])
    assert (record.replicas, record.adding_replicas, record.removing_replicas) == ([4, 1, 2], [4], [2])
