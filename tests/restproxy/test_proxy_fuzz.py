"""The REST proxy's HTTP API fuzzed from its own OpenAPI description (schemathesis): whatever a
client sends, the proxy answers with a status below 500, promptly, and keeps answering."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.schemaregistry.registry_harness import cluster_with_registry
from tests.service_harness import ServiceProcess, call

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    directory = tmp_path_factory.mktemp("proxy-fuzz")
    with cluster_with_registry(directory) as (bootstrap, registry):
        extra = ("--schema-registry", registry, "--consumer-request-timeout-ms", "200")
        with ServiceProcess("restproxy", bootstrap, directory, *extra) as process:
            yield process.url


@pytest.fixture(scope="module")
def api(proxy):
    """The proxy's API, fuzzed by random requests (the coverage phase's boundary cases for
    every parameter of every route cost the suite more than the fuzzing, for what it finds too)."""
    config = schemathesis.Config.from_dict({"phases": {"coverage": {"enabled": False}}})
    return schemathesis.openapi.from_url(f"{proxy}/openapi.json", config=config)


schema = schemathesis.pytest.from_fixture("api")


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_makes_the_proxy_fail(case, proxy):
    response = case.call(base_url=proxy, timeout=30)
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
    assert response.elapsed < 10


def test_it_still_answers_after_the_fuzzing(proxy):
    assert call(proxy, "GET", "/") == (200, {})
