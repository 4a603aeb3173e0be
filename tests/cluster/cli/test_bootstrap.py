"""Which cluster a command talks to: -b, then $KCTL_BOOTSTRAP, then the local cluster."""

from pathlib import Path

import pytest

from brokerd.state import ClusterState
from kctl.kafka.bootstrap import resolve_bootstrap, resolve_cluster_dir
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode


@pytest.fixture
def running_cluster(tmp_path):
    """A state directory in which this test process holds broker 1's liveness lock, as a
    live brokerd would; broker 2 registered once and is gone."""
    state = ClusterState(tmp_path / "cluster")
    state.initialize({1: 19092, 2: 19093})
    lock = state.register_broker(1, "127.0.0.1", 19092, 3000)
    state.register_broker(2, "127.0.0.1", 19093, 3000).release()
    yield tmp_path / "cluster"
    lock.release()


@pytest.mark.cluster
def test_flag_beats_env_and_local(running_cluster):
    chosen = resolve_bootstrap("h1:1,h2:2", running_cluster, {"KCTL_BOOTSTRAP": "env:9"})
    assert (chosen.servers, chosen.source) == ("h1:1,h2:2", "flag")


@pytest.mark.cluster
def test_env_beats_local(running_cluster):
    chosen = resolve_bootstrap(None, running_cluster, {"KCTL_BOOTSTRAP": " env:9 "})
    assert (chosen.servers, chosen.source) == ("env:9", "env")


@pytest.mark.cluster
def test_local_cluster_gives_its_live_brokers_only(running_cluster):
    chosen = resolve_bootstrap(None, running_cluster, {})
    assert (chosen.servers, chosen.source) == ("127.0.0.1:19092", "local")
    assert chosen.cluster_dir == running_cluster


@pytest.mark.unit
def test_no_local_cluster_says_what_to_do(tmp_path):
    with pytest.raises(KctlError) as info:
        resolve_bootstrap(None, tmp_path, {})
    assert info.value.code == ExitCode.UNREACHABLE
    assert "kctl cluster up" in info.value.message and "-b" in info.value.message


@pytest.mark.unit
def test_stopped_local_cluster_says_so(tmp_path):
    ClusterState(tmp_path).initialize({1: 19092})
    with pytest.raises(KctlError) as info:
        resolve_bootstrap(None, tmp_path, {})
    assert info.value.code == ExitCode.UNREACHABLE and "not running" in info.value.message


@pytest.mark.unit
@pytest.mark.parametrize("servers", ["nohost", "host:", ":9092", "host:http", "host:70000", "a:1,,b:2"])
def test_malformed_addresses_are_invalid_input(servers, tmp_path):
    with pytest.raises(KctlError) as info:
        resolve_bootstrap(servers, tmp_path, {})
    assert info.value.code == ExitCode.INVALID_INPUT


@pytest.mark.unit
def test_cluster_dir_precedence(tmp_path):
    assert resolve_cluster_dir(tmp_path / "x", {"KCTL_HOME": "/elsewhere"}) == tmp_path / "x"
    assert resolve_cluster_dir(None, {"KCTL_HOME": str(tmp_path)}) == tmp_path
    assert resolve_cluster_dir(None, {}) == Path.home() / ".kctl"
