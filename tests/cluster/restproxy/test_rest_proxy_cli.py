"""The REST proxy as kctl runs it: `kctl cluster up` starts it beside the brokers and the
registry, `kctl rest-proxy up -b` serves a cluster kctl did not start, and down stops it."""

from __future__ import annotations

import json

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import free_port, running_cluster
from tests.kctl.cli import run_kctl
from tests.kctl.local import kill_leftovers
from tests.service_harness import call

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


def test_cluster_up_starts_the_proxy_and_down_stops_it(tmp_path):
    env = {"KCTL_HOME": str(tmp_path / "cluster")}
    try:
        up = run_kctl("cluster", "up", "--brokers", "1", env=env)
        assert up.returncode == 0, up.stderr
        exports = dict(
            line.removeprefix("export ").split("=", 1)
            for line in up.stdout.decode().splitlines()
            if line.startswith("export ")
        )
        url = exports["KCTL_REST_PROXY_URL"]
        assert call(url, "GET", "/") == (200, {})
        status = json.loads(run_kctl("cluster", "status", "--json", env=env).stdout)
        assert status["rest_proxy"]["url"] == url
        assert json.loads(run_kctl("rest-proxy", "status", "--json", env=env).stdout)["url"] == url
        # an Avro value sent with curl's request, registered by the proxy, read by kctl consume
        assert run_kctl("topic", "create", "viaproxy", "-p", "1", env=env).returncode == 0
        schema = json.dumps(
            {"type": "record", "name": "Sale", "fields": [{"name": "item", "type": "string"}]}
        )
        body = {"value_schema": schema, "records": [{"value": {"item": "book"}}, {"value": {"item": "pen"}}]}
        status, answer = call(url, "POST", "/topics/viaproxy", body, "application/vnd.kafka.avro.v2+json")
        assert status == 200 and answer["value_schema_id"] is not None, answer
        consumed = run_kctl("consume", "viaproxy", "-e", env=env)
        assert consumed.stdout == b'{"item":"book"}\n{"item":"pen"}\n', consumed.stderr
        assert "viaproxy-value" in run_kctl("schema", "list", env=env).stdout.decode()
        # restarted by hand, it still uses the cluster's registry
        assert run_kctl("rest-proxy", "down", env=env).returncode == 0
        assert (
            run_kctl("rest-proxy", "up", env=env).stdout.decode().strip()
            == f"export KCTL_REST_PROXY_URL={url}"
        )
        status, answer = call(url, "POST", "/topics/viaproxy", body, "application/vnd.kafka.avro.v2+json")
        assert status == 200 and answer["value_schema_id"] is not None, answer
        down = run_kctl("cluster", "down", "--json", env=env)
        assert json.loads(down.stdout)["rest_proxy"] == "stopped"
        assert run_kctl("rest-proxy", "status", env=env).returncode == 4
    finally:
        run_kctl("cluster", "down", env=env)
        kill_leftovers(tmp_path / "cluster")


def test_a_proxy_for_a_cluster_kctl_did_not_start(tmp_path):
    env = {"KCTL_HOME": str(tmp_path / "home")}
    with running_cluster(tmp_path / "other") as cluster:
        try:
            up = run_kctl("rest-proxy", "up", "-b", cluster.bootstrap, env=env)
            assert up.returncode == 0, up.stderr
            url = up.stdout.decode().strip().removeprefix("export KCTL_REST_PROXY_URL=")
            assert call(url, "GET", "/") == (200, {})
            again = run_kctl("rest-proxy", "up", "-b", cluster.bootstrap, env=env)
            assert again.stdout.decode().strip().endswith(url)  # already running: the same one
            down = run_kctl("rest-proxy", "down", env=env)
            assert down.returncode == 0 and "stopped" in down.stderr
        finally:
            run_kctl("rest-proxy", "down", env=env)
            kill_leftovers(tmp_path / "home")


def test_a_proxy_that_cannot_reach_its_cluster_is_refused_and_gone(tmp_path):
    """`rest-proxy up` waits until the proxy has reached the cluster: with nobody at the
    address it says so (exit 3) within --timeout, and leaves no proxy running."""
    env = {"KCTL_HOME": str(tmp_path / "home")}
    nobody = f"127.0.0.1:{free_port()}"
    try:
        up = run_kctl("rest-proxy", "up", "-b", nobody, "--timeout", "2", env=env)
        assert up.returncode == ExitCode.UNREACHABLE, up.stderr
        assert f"could not reach the cluster at {nobody}" in up.stderr and up.stdout == b""
        assert run_kctl("rest-proxy", "status", env=env).returncode == ExitCode.NOT_FOUND
    finally:
        run_kctl("rest-proxy", "down", env=env)
        kill_leftovers(tmp_path / "home")
