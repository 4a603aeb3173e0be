"""The state directory's guarantees: atomic files, controller epochs, fenced writes, ISR CAS."""

import pytest

from brokerd.state import ClusterState, PartitionRegistration, StaleControllerEpoch, TopicImage

pytestmark = pytest.mark.unit


@pytest.fixture
def state(tmp_path):
    cs = ClusterState(tmp_path)
    cs.initialize({1: 9001, 2: 9002})
    return cs


def add_topic(state, epoch):
    with state.update_topics(epoch) as topics:
        topics["t"] = TopicImage("t", "id", {}, {0: PartitionRegistration(0, [1, 2], 1, 0, [1, 2])})


def test_initialize_is_idempotent_and_keeps_the_cluster_id(state):
    assert state.initialize({1: 1, 2: 2}) == state.cluster_id()
    assert state.planned_brokers() == {1: 9001, 2: 9002}


def test_controller_epoch_only_grows_and_a_live_controller_is_not_replaced(state):
    assert state.claim_controller(1, lambda b: False) == 1
    assert state.claim_controller(2, lambda b: b == 1) is None
    assert state.claim_controller(2, lambda b: False) == 2
    assert state.controller() == (2, 2)


def test_a_zombie_controller_cannot_write(state):
    old = state.claim_controller(1, lambda b: False)
    state.claim_controller(2, lambda b: False)
    with pytest.raises(StaleControllerEpoch):
        add_topic(state, old)
    assert state.topics() == {}


def test_isr_change_is_a_compare_and_set_on_the_partition_epoch(state):
    add_topic(state, state.claim_controller(1, lambda b: False))
    accepted = state.alter_isr("t", 0, leader_epoch=0, partition_epoch=0, isr=[1])
    assert accepted.isr == [1] and accepted.partition_epoch == 1
    assert state.alter_isr("t", 0, leader_epoch=0, partition_epoch=0, isr=[1, 2]) is None
    assert state.topics()["t"].partitions[0].isr == [1]


def test_unchanged_topic_updates_append_no_metadata_record(state):
    epoch = state.claim_controller(1, lambda b: False)
    add_topic(state, epoch)
    before = state.metadata_image().offset
    with state.update_topics(epoch) as topics:
        topics["t"].configs.update({})
    with state.update_topic_configs():
        pass
    assert ClusterState(state.cluster_dir).metadata_image().offset == before
    assert not list(state.dir.glob(".*.tmp"))
