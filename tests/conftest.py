import os
import uuid

import pytest

from tests.cluster_harness import LocalCluster
from tests.kctl.cli import run_kctl
from tests.kctl.local import KctlProcess, kill_leftovers
from tests.kctl.mock_cluster import mock_cluster

# Every JVM the tests start (the Spark session, connect workers, kctl sql, a standalone
# cluster) compiles with C1 only and collects on one thread: a test's JVM lives seconds or
# minutes, too short for C2's compiler threads to pay back their CPU, which on a 2-core
# machine is taken from the brokers and the other tests. It halves a Spark start's CPU.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


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


SHARED_SCOPES = ("package", "module", "class")


def _shares_a_fixture(item) -> bool:
    """Whether the test uses a fixture that lives longer than one test (a module's cluster)."""
    return any(
        fixturedef.scope in SHARED_SCOPES
        for fixturedefs in item._fixtureinfo.name2fixturedefs.values()
        for fixturedef in fixturedefs
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Parallel runs (`--dist loadgroup`) keep together the tests of a module that share a
    fixture, so its cluster starts once, and every Spark test, so one JVM serves them all;
    every other test goes to whichever worker is free, so a long module spreads out."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    _longest_first(items)


LENGTH_RANK = {"spark": 0, "slow": 1}  # every other tier after them


def _longest_first(items: list[pytest.Item]) -> None:
    """Workers take modules in collection order: the Spark tests (one worker's chain of a
    few minutes) and the slow modules go first, so no long test starts last while the other
    workers idle. Modules move whole; tests keep their order within a module."""
    rank: dict[str, int] = {}
    for item in items:
        tiers = [LENGTH_RANK.get(mark.name, len(LENGTH_RANK)) for mark in item.iter_markers()]
        rank[item.module.__name__] = min([rank.get(item.module.__name__, len(LENGTH_RANK)), *tiers])
    items.sort(key=lambda item: rank[item.module.__name__])


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
    kill_leftovers(directory)


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
