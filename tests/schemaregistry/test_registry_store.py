"""The registry keeps everything in the cluster's `_schemas` topic: what it registered survives
its SIGKILL and a restart of every broker, and two registries of one cluster agree on ids."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.cluster_harness import running_cluster
from tests.schemaregistry.registry_harness import RegistryProcess, call

pytestmark = pytest.mark.cluster


def schema(n: int) -> str:
    return json.dumps({"type": "record", "name": f"R{n}", "fields": [{"name": "f", "type": "int"}]})


def register(url: str, subject: str, text: str) -> int:
    status, body = call(url, "POST", f"/subjects/{subject}/versions", {"schema": text})
    assert status == 200, body
    return body["id"]


def test_ids_survive_a_killed_registry_and_restarted_brokers(tmp_path):
    with running_cluster(tmp_path / "cluster", brokers=3) as cluster:
        with RegistryProcess(cluster.bootstrap, tmp_path) as registry:
            ids = {n: register(registry.url, f"s{n}-value", schema(n)) for n in range(5)}
            call(registry.url, "PUT", "/config", {"compatibility": "FULL"})
            call(registry.url, "DELETE", "/subjects/s4-value")
            registry.kill()
        cluster.stop()
        cluster.start()
        with RegistryProcess(cluster.bootstrap, tmp_path) as registry:
            for n, schema_id in ids.items():
                assert call(registry.url, "GET", f"/schemas/ids/{schema_id}")[1]["schema"] == schema(n)
            assert call(registry.url, "GET", "/subjects")[1] == [f"s{n}-value" for n in range(4)]
            assert call(registry.url, "GET", "/config")[1] == {"compatibilityLevel": "FULL"}
            assert register(registry.url, "s5-value", schema(5)) == max(ids.values()) + 1


def test_two_registries_of_one_cluster_never_give_one_id_to_two_schemas(tmp_path):
    with running_cluster(tmp_path / "cluster") as cluster:
        with (
            RegistryProcess(cluster.bootstrap, tmp_path) as first,
            RegistryProcess(cluster.bootstrap, tmp_path) as second,
        ):
            jobs = [(first.url if n % 2 else second.url, n) for n in range(24)]
            with ThreadPoolExecutor(8) as pool:
                ids = dict(
                    zip(
                        [n for _, n in jobs],
                        pool.map(lambda job: register(job[0], f"c{job[1]}-value", schema(job[1])), jobs),
                    )
                )
            assert len(set(ids.values())) == len(ids)
            for n, schema_id in ids.items():
                for url in (first.url, second.url):
                    assert call(url, "GET", f"/schemas/ids/{schema_id}")[1]["schema"] == schema(n)
                    assert call(url, "GET", f"/subjects/c{n}-value/versions/1")[1]["id"] == schema_id
