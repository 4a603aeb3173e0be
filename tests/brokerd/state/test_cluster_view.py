"""kctl's view of the state directory (ClusterView): it reads what the brokers' ClusterState
wrote, and a cluster from before the metadata log is upgraded when kctl follows the log."""

from __future__ import annotations

import json

import pytest

from brokerd.metadata.image import TopicImage
from brokerd.metadata.registration import PartitionRegistration
from brokerd.state.cluster_setup import open_setup
from brokerd.state.cluster_view import open_view
from brokerd.state.faults import InjectedFaults, NetworkFaults

pytestmark = pytest.mark.unit


def test_the_view_reads_what_the_cluster_wrote(tmp_path):
    state = open_setup(tmp_path)
    cluster_id = state.initialize({1: 9001, 2: 9002})
    view = open_view(tmp_path)
    assert (view.exists(), view.cluster_id(), view.planned_brokers()) == (
        True,
        cluster_id,
        {1: 9001, 2: 9002},
    )
    assert view.controller() is None and view.brokers() == [] and not view.is_alive(1)
    assert not view.network_faults() and view.replication_throttle(1) is None
    assert view.topics() == {} and view.replica_status() == {} and view.security_events() == []


def test_following_a_cluster_from_before_the_log_upgrades_it_first(tmp_path):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "cluster.json").write_text(json.dumps({"cluster_id": "c", "brokers": {"1": 9001}}))
    old = TopicImage("old", "id-old", {}, {0: PartitionRegistration(0, [1], 1, 4, [1], 9)})
    (state_dir / "metadata.json").write_text(
        json.dumps({"controller_epoch": 3, "topics": {"old": old.to_json()}})
    )
    seen: list[dict] = []
    catch_up = open_view(tmp_path).follow_metadata(lambda record, _image: seen.append(record))
    catch_up()
    assert not (state_dir / "metadata.json").exists()
    assert len(seen) == 2  # the topic's record and its partition's


def test_network_faults_written_by_kctl_are_what_the_view_reads(tmp_path):
    open_setup(tmp_path).initialize({1: 9001, 2: 9002})
    faults = NetworkFaults(cut_from_quorum=frozenset({2}))
    InjectedFaults(tmp_path).change_network_faults(lambda _: faults)
    assert open_view(tmp_path).network_faults() == faults
