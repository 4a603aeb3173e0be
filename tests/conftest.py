import os
import signal
import uuid

import pytest

from brokerd.state import ClusterState
from tests.cluster_harness import LocalCluster
from tests.kctl.cli import run_kctl
from tests.kctl.local import KctlProcess
from tests.kctl.mock_cluster import mock_cluster


@pytest.fixture
def cluster_factory(tmp_path):
    """Make LocalClusters that are always stopped, whatever the test did."""
    made = []

    def make(brokers: int = 1, overrides: dict[str, str] | None = None, start: bool = True):
        cluster = LocalCluster(tmp_path / f"cluster{len(made)}", brokers, overrides)
        made.append(cluster)
        if start:
            cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.stop()


@pytest.fixture
def cluster(cluster_factory):
    """One running broker."""
    return cluster_factory(1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Parallel runs (`--dist loadgroup`) keep each module on one worker, so a module's shared
    cluster starts once, and every Spark test on one worker, so one JVM serves them all."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = "spark" if item.get_closest_marker("spark") else item.module.__name__
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def mock_bootstrap():
    """One librdkafka mock cluster (3 brokers) for the whole session; topics are per test."""
    with mock_cluster(brokers=3) as bootstrap:
        yield bootstrap


@pytest.fixture
def isolated_env(tmp_path, monkeypatch):
    """No local cluster and no KCTL_* from the developer's shell: only what the test sets."""
    for var in ("KCTL_BOOTSTRAP", "KCTL_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KCTL_HOME", str(tmp_path / "no-cluster"))
    return {"KCTL_HOME": str(tmp_path / "no-cluster")}


@pytest.fixture
def topic():
    """A fresh topic name; the mock cluster creates topics on first use, with 4 partitions."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def cluster_dir(tmp_path, isolated_env):
    """A directory for `kctl cluster up`; its brokers are stopped at the end, whatever the test
    did to them (paused ones included: SIGKILL ends a stopped process too)."""
    directory = tmp_path / "cluster"
    yield directory
    run_kctl("cluster", "down", "--dir", str(directory), env=isolated_env)
    for reg in ClusterState(directory).brokers():
        if reg.alive:
            os.kill(reg.pid, signal.SIGKILL)


@pytest.fixture
def kctl_processes():
    """Start background kctl processes with start(directory, *args); all are killed at the end."""
    started = []

    def start(directory, *args):
        process = KctlProcess(directory, *args)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()
