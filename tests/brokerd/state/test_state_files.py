"""The state directory's small documents, each through its part of ClusterState: the broker
plan, the topic-request queue, producer id blocks, injected faults, replica status, security
files; and that a change of nothing appends no metadata record."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys

import pytest

from brokerd.state import ClusterState

pytestmark = pytest.mark.unit


@pytest.fixture
def state(tmp_path):
    cs = ClusterState(tmp_path)
    cs.initialize({1: 9001})
    return cs


def test_the_plan_gives_each_added_broker_the_next_id(state):
    assert state.plan_broker(9002) == 2
    assert state.plan_broker(9003) == 3
    state.unplan_broker(2)
    assert state.planned_brokers() == {1: 9001, 3: 9003}
    assert state.plan_broker(9004) == 4  # never an id still planned
    assert state.broker_dir(4).is_dir()


def test_topic_requests_are_taken_once(state):
    state.request_topic_creation("b")
    state.request_topic_creation("a")
    state.request_topic_creation("b")
    assert state.take_topic_requests() == ["a", "b"]
    assert state.take_topic_requests() == []


def test_producer_id_blocks_never_overlap_across_readers(state):
    other = ClusterState(state.cluster_dir)
    assert state.allocate_producer_ids(1000) == 0
    assert other.allocate_producer_ids(10) == 1000
    assert state.allocate_producer_ids(1) == 1010


def test_a_replication_throttle_is_set_and_lifted(state):
    assert state.replication_throttle(1) is None
    state.set_replication_throttle(1, 50_000)
    assert ClusterState(state.cluster_dir).replication_throttle(1) == 50_000
    state.set_replication_throttle(1, None)
    assert state.replication_throttle(1) is None


def test_replica_status_is_read_back_by_broker_and_partition(state):
    state.publish_replica_status(1, b'{"orders:0": {"hw": 5}, "orders.v2:1": {"hw": 0}}')
    assert state.replica_status() == {1: {("orders", 0): {"hw": 5}, ("orders.v2", 1): {"hw": 0}}}


def test_scram_credentials_stay_private_and_versions_change_with_each_write(state):
    assert state.scram_credentials_version() is None
    state.bootstrap_scram_credential("admin", "SCRAM-SHA-256", b"s", b"k1", b"k2", 4096)
    first = state.scram_credentials_version()
    path = state.dir / "scram-credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert state.scram_credentials()["admin"]["SCRAM-SHA-256"]["iterations"] == 4096
    with state.update_acl_bindings() as bindings:
        bindings.append({"principal": "User:admin"})
    with state.update_scram_credentials() as credentials:
        credentials.pop("admin")
    assert state.scram_credentials() == {} and state.scram_credentials_version() != first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert state.acl_bindings() == [{"principal": "User:admin"}]


def test_a_failed_update_writes_nothing(state):
    with pytest.raises(RuntimeError), state.update_client_quotas() as entries:
        entries.append({"entity": {"user": "alice"}, "values": {"producer_byte_rate": 1.0}})
        raise RuntimeError("refused")
    assert state.client_quotas() == [] and state.client_quotas_version() is None


def test_unchanged_broker_configs_append_no_metadata_record(state):
    with state.update_dynamic_broker_configs(None) as configs:
        configs["log.retention.ms"] = "5000"
    before = state.metadata_image().offset
    with state.update_dynamic_broker_configs(None) as configs:
        configs["log.retention.ms"] = "5000"
    with state.update_dynamic_broker_configs(1):
        pass
    assert ClusterState(state.cluster_dir).metadata_image().offset == before
    assert state.dynamic_broker_configs(None) == {"log.retention.ms": "5000"}


def test_liveness_is_the_lock_a_live_process_holds_and_probes_never_disturb_each_other(state, tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from brokerd.state import ClusterState; "
            f"lock = ClusterState({str(tmp_path)!r}).register_broker(1, '127.0.0.1', 9001, 3000); "
            "print('registered', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "registered\n"
        assert state.is_alive(1)
        holder.kill()
        holder.wait()
        (lock_file,) = tmp_path.rglob("brokers/1.lock")
        another_probe = os.open(lock_file, os.O_RDONLY)
        try:
            fcntl.flock(another_probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a probe at the same moment
            assert not state.is_alive(1)  # dead, though another probe holds the lock just now
        finally:
            os.close(another_probe)
        assert not state.is_alive(2)  # never registered
        state.register_broker(1, "127.0.0.1", 9001, 3000).release()  # the id is free again
    finally:
        holder.kill()
        holder.wait()
