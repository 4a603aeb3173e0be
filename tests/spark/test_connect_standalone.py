"""The connect worker on a Spark standalone cluster, as users who outgrow one machine run it:
`kctl connect up --master spark://...` sends its connectors' tasks to the cluster's workers.
A FileStreamSink moves 100,000 records of a 4-partition topic into a file, each once, and
both workers' executors ran tasks."""

from __future__ import annotations

import pytest

from tests.cluster_harness import wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import BROKERS_ONLY, kill_leftovers
from tests.service_harness import call
from tests.spark.standalone import spark_standalone

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect-jdbc"), pytest.mark.timeout(420)]

RECORDS = 100_000
MOVE_S = 300  # two executors' JVMs and Python workers start on two busy cores


def test_a_sink_on_a_standalone_cluster_runs_tasks_on_both_workers(tmp_path):
    env = {"KCTL_HOME": str(tmp_path / "cluster")}
    with spark_standalone(tmp_path / "spark") as spark:
        try:
            up = run_kctl("cluster", "up", "--brokers", "1", *BROKERS_ONLY, env=env, timeout=120)
            assert up.returncode == 0, up.stderr
            assert run_kctl("topic", "create", "numbers", "-p", "4", env=env).returncode == 0
            lines = "".join(f"{n}\n" for n in range(RECORDS)).encode()
            produced = run_kctl("produce", "numbers", "--acks", "all", input=lines, env=env, timeout=120)
            assert produced.returncode == 0, produced.stderr
            started = run_kctl("connect", "up", "--master", spark.master, env=env, timeout=60)
            assert started.returncode == 0, started.stderr
            url = started.stdout.decode().strip().removeprefix("export KCTL_CONNECT_URL=")
            sink = tmp_path / "numbers.txt"
            config = {
                "connector.class": "FileStreamSink",
                "file": str(sink),
                "topics": "numbers",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            }
            status, body = call(url, "POST", "/connectors", {"name": "numbers-out", "config": config})
            assert status == 201, body

            def moved() -> int:
                return sink.read_bytes().count(b"\n") if sink.exists() else 0

            wait_until(lambda: moved() >= RECORDS, MOVE_S, f"{RECORDS} lines in the sink's file", 1.0)
            assert sorted(int(line) for line in sink.read_text().splitlines()) == list(range(RECORDS))
            assert all(count > 0 for count in spark.tasks_run()), spark.tasks_run()
        finally:
            run_kctl("cluster", "down", env=env, timeout=60)
            kill_leftovers(tmp_path / "cluster")
