"""The REST proxy of a SASL-secured cluster asks for HTTP basic credentials, accepts the
cluster's users, and acts on the brokers as each user: their ACLs decide."""

from __future__ import annotations

import base64

import pytest

from tests.kctl.cli import run_kctl
from tests.kctl.local import kill_leftovers
from tests.service_harness import call

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

JSON_V2 = "application/vnd.kafka.json.v2+json"


def as_user(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def produce(url: str, headers: dict[str, str] | None) -> tuple[int, object]:
    return call(url, "POST", "/topics/orders", {"records": [{"value": {"n": 1}}]}, JSON_V2, headers=headers)


def test_users_produce_as_themselves(tmp_path):
    env = {"KCTL_HOME": str(tmp_path / "cluster")}

    def kctl(*args: str, input: str | None = None) -> str:
        result = run_kctl(*args, input=input, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout.decode()

    try:
        up = kctl("cluster", "up", "--brokers", "1", "--security-protocol", "SASL_PLAINTEXT")
        url = next(line for line in up.splitlines() if "REST_PROXY_URL" in line).split("=", 1)[1]
        kctl("topic", "create", "orders", "-p", "1")
        for user in ("alice", "bob"):
            kctl("user", "create", user, "--password-stdin", input=f"{user}-secret\n")
        kctl("acl", "create", "--allow-principal", "User:alice", "--operation", "write", "--topic", "orders")
        kctl("acl", "create", "--allow-principal", "User:bob", "--operation", "describe", "--topic", "orders")

        assert produce(url, None)[0] == 401
        assert produce(url, as_user("alice", "wrong"))[0] == 401
        status, body = produce(url, as_user("alice", "alice-secret"))
        assert status == 200 and body["offsets"][0]["offset"] == 0, body
        status, body = produce(url, as_user("bob", "bob-secret"))  # bob may see the topic, not write
        refused = body["offsets"][0] if status == 200 else body
        assert "authoriz" in str(refused).lower(), (status, body)
        assert kctl("consume", "orders", "-e") == '{"n":1}\n'  # alice's record only
        # an Avro value through the proxy, registered with alice's login to the registry, read
        # back decoded by a consumer instance: the proxy's registry client logs in too
        schema = '{"type":"record","name":"N","fields":[{"name":"n","type":"int"}]}'
        avro = {"value_schema": schema, "records": [{"value": {"n": 2}}]}
        alice = as_user("alice", "alice-secret")
        status, body = call(
            url, "POST", "/topics/orders", avro, "application/vnd.kafka.avro.v2+json", headers=alice
        )
        assert status == 200, body
        kctl("acl", "create", "--allow-principal", "User:alice", "--operation", "read", "--topic", "orders")
        kctl("acl", "create", "--allow-principal", "User:alice", "--operation", "read", "--group", "readers")
        v2 = "application/vnd.kafka.v2+json"
        created = {"name": "a", "format": "avro", "auto.offset.reset": "earliest"}
        status, body = call(url, "POST", "/consumers/readers", created, v2, headers=alice)
        assert status == 200, body
        path = "/consumers/readers/instances/a"
        assert (
            call(
                url,
                "POST",
                f"{path}/assignments",
                {"partitions": [{"topic": "orders", "partition": 0}]},
                v2,
                headers=alice,
            )[0]
            == 204
        )
        assert (
            call(
                url,
                "POST",
                f"{path}/positions",
                {"offsets": [{"topic": "orders", "partition": 0, "offset": 1}]},
                v2,
                headers=alice,
            )[0]
            == 204
        )
        reading = {**alice, "Accept": "application/vnd.kafka.avro.v2+json"}
        status, got = call(url, "GET", f"{path}/records?timeout=3000", headers=reading)
        assert status == 200 and [r["value"] for r in got] == [{"n": 2}], got
        # restarted by hand, the proxy logs in to the brokers and asks its users as before
        kctl("rest-proxy", "down")
        assert kctl("rest-proxy", "up").strip() == f"export KCTL_REST_PROXY_URL={url}"
        assert produce(url, None)[0] == 401
        status, body = produce(url, alice)
        assert status == 200 and body["offsets"][0]["offset"] == 2, body
    finally:
        run_kctl("cluster", "down", env=env)
        kill_leftovers(tmp_path / "cluster")
