import pytest

from tests.cluster_harness import LocalCluster


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
