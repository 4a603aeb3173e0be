"""The schema registry of a SASL-secured cluster: it reaches the brokers as the super user and
asks its own users for HTTP basic credentials, accepting the cluster's users only."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest

from tests.kctl.cli import run_kctl
from tests.kctl.local import kill_leftovers

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


def get(url: str, path: str, user: str | None = None, password: str = "") -> int:
    request = urllib.request.Request(url + path)
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        assert error.code != 401 or error.headers["WWW-Authenticate"] == 'Basic realm="SchemaRegistry"'
        assert error.code != 401 or json.loads(error.read()) == {"error_code": 401, "message": "Unauthorized"}
        return error.code


def test_only_the_clusters_users_reach_the_registry(tmp_path):
    env = {"KCTL_HOME": str(tmp_path / "cluster")}
    try:
        up = run_kctl(
            "cluster",
            "up",
            "--brokers",
            "1",
            "--security-protocol",
            "SASL_PLAINTEXT",
            "--no-rest-proxy",
            env=env,
        )
        assert up.returncode == 0, up.stderr
        url = next(line for line in up.stdout.decode().splitlines() if "SCHEMA_REGISTRY_URL" in line).split(
            "=", 1
        )[1]
        assert get(url, "/subjects") == 401
        assert get(url, "/subjects", "admin", "not the password") == 401
        created = run_kctl("user", "create", "alice", "--password", "alice-secret", env=env)
        assert created.returncode == 0, created.stderr
        assert get(url, "/subjects", "alice", "alice-secret") == 200
        assert get(url, "/subjects", "alice", "wrong") == 401
        # kctl's own commands log in as the cluster's super user
        schema = tmp_path / "v.avsc"
        schema.write_text(
            json.dumps({"type": "record", "name": "V", "fields": [{"name": "n", "type": "int"}]})
        )
        assert run_kctl("topic", "create", "secured", "-p", "1", env=env).returncode == 0
        produced = run_kctl("produce", "secured", "--value-schema", str(schema), input='{"n": 7}\n', env=env)
        assert produced.returncode == 0, produced.stderr
        consumed = run_kctl("consume", "secured", "-e", env=env)
        assert consumed.stdout == b'{"n":7}\n', consumed.stderr
        assert "secured-value" in run_kctl("schema", "list", env=env).stdout.decode()
    finally:
        run_kctl("cluster", "down", env=env)
        kill_leftovers(tmp_path / "cluster")
