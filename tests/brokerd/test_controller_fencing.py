"""A broker that still takes itself for the controller after another claimed a newer epoch
(two brokers starting at once, or one paused past its lease) must answer an admin request with
NOT_CONTROLLER, which clients retry at the new controller, and write nothing."""

import pytest
from kafka.errors import NotControllerError

from brokerd.controller import Controller, LeaderRebalance
from brokerd.state import ClusterState

pytestmark = pytest.mark.unit


def superseded_controller(tmp_path) -> Controller:
    state = ClusterState(tmp_path)
    state.initialize({1: 9001, 2: 9002})
    controller = Controller(1, state, 1.5, LeaderRebalance(False, 300, 10), dict, lambda: 1000)
    controller.epoch = state.claim_controller(1, is_live=lambda broker_id: False)
    assert state.claim_controller(2, is_live=lambda broker_id: False) == controller.epoch + 1
    return controller


def test_a_superseded_controller_answers_not_controller_and_resigns(tmp_path):
    controller = superseded_controller(tmp_path)
    with pytest.raises(NotControllerError, match="no longer the controller"):
        controller.create_topic("orders", 1, 1, {}, [1, 2])
    assert not controller.is_active
    assert "orders" not in controller.state.topics()


def test_every_admin_write_of_a_superseded_controller_is_refused_the_same_way(tmp_path):
    controller = superseded_controller(tmp_path)
    with pytest.raises(NotControllerError):
        controller.delete_topic("orders")
    assert not controller.is_active
