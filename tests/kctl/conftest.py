import uuid

import pytest

from tests.kctl.mock_cluster import mock_cluster


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
