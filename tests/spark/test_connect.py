"""The connect worker as users run it, on a kctl cluster: `kctl connect up` starts it beside the
brokers; Kafka Connect's REST API answers with Connect's shapes and error bodies; a
FileStreamSource -> topic -> FileStreamSink round trip carries lines appended while it runs,
each once and in order, also across a SIGKILL of the worker (and its Spark application); and
`kctl connect` refuses a bad config in Connect's words. One cluster and one worker serve the
module: the worker's Spark application starts once, with the first running connector."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kctl.cluster import localservice
from tests.cluster_harness import wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import BROKERS_ONLY, kill_leftovers
from tests.service_harness import call

# Spark runs in the worker's own process, not in the tests' shared SparkSession: the module
# need not wait in the Spark tests' chain (tests/conftest.py), and runs beside it
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect"), pytest.mark.timeout(420)]

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SPARK_WAIT_S = 240  # the worker's first query waits for a JVM and Spark's Python workers


@dataclass
class Worker:
    home: Path
    env: dict[str, str]
    url: str

    @property
    def cluster_dir(self) -> Path:
        return Path(self.env["KCTL_HOME"])

    def kctl(self, *args: str, expect: int = 0, input: str | None = None, timeout: float = 60):
        result = run_kctl(*args, input=input, env=self.env, timeout=timeout)
        assert result.returncode == expect, result.stderr
        return result


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    home = tmp_path_factory.mktemp("connect")
    env = {"KCTL_HOME": str(home / "cluster")}
    try:
        up = run_kctl("cluster", "up", "--brokers", "1", *BROKERS_ONLY, env=env, timeout=120)
        assert up.returncode == 0, up.stderr
        started = run_kctl("connect", "up", env=env, timeout=60)
        assert started.returncode == 0, started.stderr
        url = started.stdout.decode().strip().removeprefix("export KCTL_CONNECT_URL=")
        yield Worker(home, env, url)
    finally:
        run_kctl("cluster", "down", env=env, timeout=60)
        kill_leftovers(home / "cluster")


@pytest.fixture(autouse=True)
def connectors_deleted(request):
    """Every test leaves the module's worker without connectors: one left running keeps its
    query's micro-batches going, and with them the CPU every later test needs."""
    yield
    if "worker" not in request.fixturenames:
        return
    url = request.getfixturevalue("worker").url
    try:
        names = call(url, "GET", "/connectors")[1]
    except OSError:
        return  # the test stopped the worker
    for name in names:
        call(url, "DELETE", f"/connectors/{name}")


def test_rest_api_shapes_and_errors(worker):
    url = worker.url
    status, root = call(url, "GET", "/")
    assert status == 200 and set(root) == {"version", "commit", "kafka_cluster_id"}
    assert call(url, "GET", "/connectors") == (200, [])
    assert call(url, "GET", "/connectors/foo") == (
        404,
        {"error_code": 404, "message": "Connector foo not found"},
    )
    assert call(url, "GET", "/nowhere") == (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    plugins = call(url, "GET", "/connector-plugins")[1]
    assert {"class": SOURCE, "type": "source", "version": "3.9.0"} in plugins
    assert len(call(url, "GET", "/connector-plugins?connectorsOnly=false")[1]) > len(plugins)
    assert call(url, "GET", "/openapi.json")[0] == 200

    status, infos = call(url, "PUT", f"/connector-plugins/{SOURCE}/config/validate", {"topic": "t"})
    assert status == 200 and infos["name"] == SOURCE and infos["error_count"] == 2
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"] if c["value"]["errors"]}
    assert errors["file"] == ['Missing required configuration "file" which has no default value.']
    status, body = call(
        url,
        "PUT",
        "/connector-plugins/FileStreamSource/config/validate",
        {"connector.class": "FileStreamSink"},
    )
    assert (status, body["message"]) == (
        400,
        "Included connector type FileStreamSink does not match request type FileStreamSource",
    )

    config = {"connector.class": "FileStreamSource", "file": str(worker.home / "none"), "topic": "t"}
    status, body = call(
        url, "POST", "/connectors", {"name": "bad", "config": {"connector.class": "FileStreamSource"}}
    )
    assert status == 400 and body["error_code"] == 400
    assert body["message"].startswith(
        "Connector configuration is invalid and contains the following 2 error(s):"
    )

    status, info = call(
        url, "POST", "/connectors", {"name": "quiet", "config": config, "initial_state": "STOPPED"}
    )
    assert status == 201 and info == {
        "name": "quiet",
        "config": {**config, "name": "quiet"},
        "tasks": [],
        "type": "source",
    }
    assert call(url, "POST", "/connectors", {"name": "quiet", "config": config}) == (
        409,
        {"error_code": 409, "message": "Connector quiet already exists"},
    )
    assert call(url, "GET", "/connectors/quiet/status")[1] == {
        "name": "quiet",
        "connector": {"state": "STOPPED", "worker_id": url.removeprefix("http://")},
        "tasks": [],
        "type": "source",
    }
    assert call(url, "PUT", "/connectors/quiet/config", {**config, "name": "other"}) == (
        400,
        {
            "error_code": 400,
            "message": "Connector name configuration (other) doesn't match connector name in the URL (quiet)",
        },
    )
    assert call(url, "PUT", "/connectors/quiet/pause")[0] == 202
    paused = call(url, "GET", "/connectors?expand=status&expand=info")[1]["quiet"]
    assert paused["status"]["tasks"] == [
        {"id": 0, "state": "PAUSED", "worker_id": url.removeprefix("http://")}
    ]
    assert paused["info"]["tasks"] == [{"connector": "quiet", "task": 0}]
    assert call(url, "GET", "/connectors/quiet/tasks")[1][0]["id"] == {"connector": "quiet", "task": 0}
    assert call(url, "POST", "/connectors/quiet/restart")[0] == 204
    status, restarting = call(url, "POST", "/connectors/quiet/restart?includeTasks=true&onlyFailed=true")
    assert status == 202 and restarting["tasks"][0]["state"] == "PAUSED"  # not failed: not restarted
    status, body = call(url, "DELETE", "/connectors/quiet/offsets")
    assert status == 400 and body["message"].startswith(
        "Connectors must be in the STOPPED state before their offsets can be modified."
    )
    assert call(url, "PUT", "/connectors/quiet/stop")[0] == 204
    assert call(url, "DELETE", "/connectors/quiet/offsets") == (
        200,
        {"message": "The offsets for this connector have been reset successfully"},
    )
    assert call(url, "PATCH", "/connectors/quiet/config", {"tasks.max": 2})[1]["config"]["tasks.max"] == "2"
    assert "tasks.max" not in call(url, "PATCH", "/connectors/quiet/config", {"tasks.max": None})[1]["config"]
    assert call(url, "GET", "/connectors/quiet/offsets") == (200, {"offsets": []})
    assert call(url, "GET", "/connectors/quiet/topics") == (200, {"quiet": {"topics": []}})
    assert call(url, "DELETE", "/connectors/quiet")[0] == 204
    assert call(url, "GET", "/connectors/quiet")[0] == 404


def test_a_config_topic_that_is_not_compacted_stops_a_worker_in_connects_words(worker):
    worker.kctl("topic", "create", "not-compacted", "-p", "1")
    brokers = json.loads(worker.kctl("cluster", "status", "--json").stdout)["brokers"]
    bootstrap = ",".join(f"{b['host']}:{b['port']}" for b in brokers)
    argv = ["--bootstrap", bootstrap, "--port", "0", "--dir", str(worker.home / "other")]
    argv += ["--worker-config", "config.storage.topic=not-compacted"]
    refused = subprocess.run(
        [sys.executable, "-m", "connect", *argv], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert (
        "Topic 'not-compacted' supplied via the 'config.storage.topic' property is required to have "
        "'cleanup.policy=compact'" in refused.stderr
    )


def test_a_file_round_trip_survives_a_sigkill_of_the_worker_without_loss_or_duplicates(worker):
    source, sink = worker.home / "in.txt", worker.home / "out.txt"
    worker.kctl("topic", "create", "lines", "-p", "1")
    source.write_text("".join(f"line {i}\n" for i in range(50)) + "héllo, wörld\r\n")
    for name, config in (
        ("file-in", {"connector.class": "FileStreamSource", "file": str(source), "topic": "lines"}),
        ("file-out", {"connector.class": "FileStreamSink", "file": str(sink), "topics": "lines"}),
    ):
        status, body = call(worker.url, "POST", "/connectors", {"name": name, "config": config})
        assert status == 201, body
    appending = threading.Thread(target=_append, args=(source, range(51, 250)))
    appending.start()
    try:
        wait_until(lambda: _lines(sink) > 60, SPARK_WAIT_S, "appended lines in the sink's file", 0.5)
        running = localservice.running(worker.cluster_dir, localservice.CONNECT)
        assert running is not None
        os.kill(running.pid, signal.SIGKILL)
    finally:
        appending.join()
    again = worker.kctl("connect", "up")
    assert again.stdout.decode().strip().endswith(worker.url)  # its port is kept
    wait_until(lambda: _lines(sink) >= 250, SPARK_WAIT_S, "the lines written before the kill", 0.5)
    _append(source, range(250, 400))  # while the restarted worker runs
    expected = source.read_text()
    wait_until(lambda: sink.read_text() == expected, SPARK_WAIT_S, "every line once, in order", 0.5)
    # the topic has the worker's default converter's records: JsonConverter with schemas
    first = worker.kctl("consume", "lines", "-e", "-n", "1").stdout
    assert json.loads(first) == {"schema": {"type": "string", "optional": False}, "payload": "line 0"}
    # a batch's commit may trail what it wrote (to the topic, to the file)
    position = {"partition": {"filename": str(source)}, "offset": {"position": len(source.read_bytes())}}
    wait_until(lambda: _offsets(worker, "file-in") == [position], 60, "the source's committed position", 0.5)
    read = {"partition": {"kafka_topic": "lines", "kafka_partition": 0}, "offset": {"kafka_offset": 400}}
    wait_until(lambda: _offsets(worker, "file-out") == [read], 60, "the sink's committed position", 0.5)


def _offsets(worker: Worker, name: str) -> list[dict]:
    return call(worker.url, "GET", f"/connectors/{name}/offsets")[1]["offsets"]


def _task(worker: Worker, name: str) -> dict:
    return call(worker.url, "GET", f"/connectors/{name}/status")[1]["tasks"][0]


def _append(path: Path, numbers: range) -> None:
    for i in numbers:
        with open(path, "a") as handle:
            handle.write(f"line {i}\n")
        time.sleep(0.02)


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def test_kctl_connect_is_a_client_of_the_rest_api(worker):
    bad = worker.home / "bad.json"
    bad.write_text(json.dumps({"name": "bad", "connector.class": "FileStreamSink", "topics": "lines"}))
    refused = worker.kctl("connect", "create", str(bad), expect=5)
    assert refused.stderr.strip() == (
        "kctl: error: Connector configuration is invalid and contains the following 1 error(s): Missing "
        'required configuration "file" which has no default value. You can also find the above list of '
        "errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
    )
    good = worker.home / "good.json"
    config = {"connector.class": "FileStreamSink", "topics": "lines", "file": str(worker.home / "copy.txt")}
    good.write_text(json.dumps({"name": "copy", "config": config, "initial_state": "PAUSED"}))
    worker.kctl("connect", "create", str(good))
    listed = worker.kctl("connect", "list").stdout.decode()
    assert "copy" in listed and "PAUSED" in listed
    assert (
        json.loads(worker.kctl("connect", "describe", "copy", "--json").stdout)["info"]["config"]["topics"]
        == "lines"
    )
    worker.kctl("connect", "stop", "copy")
    worker.kctl("connect", "delete", "copy")
    assert "connector copy not found" in worker.kctl("connect", "describe", "copy", expect=4).stderr.lower()
    assert "FileStreamSourceConnector" in worker.kctl("connect", "plugins").stdout.decode()
    # a record the converter cannot read fails the task, and its status says why
    worker.kctl("topic", "create", "plain", "-p", "1")
    worker.kctl("produce", "plain", input='{"plain": "json"}\n')
    strict = worker.home / "strict.json"
    sink = {"connector.class": "FileStreamSink", "topics": "plain", "file": str(worker.home / "plain.txt")}
    strict.write_text(json.dumps({"name": "strict", **sink}))
    worker.kctl("connect", "create", str(strict), "--no-wait")
    wait_until(lambda: _task(worker, "strict")["state"] == "FAILED", SPARK_WAIT_S, "the task to fail", 0.5)
    trace = _task(worker, "strict")["trace"]
    assert 'JsonConverter with schemas.enable requires "schema" and "payload"' in trace
    assert "Tolerance exceeded in error handler" in trace  # errors.tolerance=none, the default
    assert "where consumed record is {topic='plain', partition=0, offset=0}" in trace
    described = worker.kctl("connect", "describe", "strict").stdout.decode()
    assert "task 0: FAILED" in described and "schemas.enable" in described
    worker.kctl("connect", "delete", "strict")
    unreachable = worker.kctl("connect", "list", "--url", "http://127.0.0.1:1", expect=3).stderr
    assert len(unreachable.strip().splitlines()) == 1
    status = json.loads(worker.kctl("cluster", "status", "--json").stdout)
    assert status["connect"]["url"] == worker.url


def test_tolerated_records_go_to_the_dead_letter_queue_once_with_connects_context_headers(worker):
    envelope = {"schema": {"type": "string", "optional": False}}
    good = [json.dumps({**envelope, "payload": f"line {i}"}) for i in range(6)]
    bad = ['{"plain": "json"}', "not json at all"]
    worker.kctl("topic", "create", "mixed", "-p", "1")
    worker.kctl(
        "produce", "mixed", input="\n".join([*good[:2], bad[0], *good[2:4], bad[1], *good[4:]]) + "\n"
    )
    sink = worker.home / "mixed.txt"
    config = {
        "connector.class": "FileStreamSink",
        "topics": "mixed",
        "file": str(sink),
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "mixed-dlq",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    status, body = call(worker.url, "POST", "/connectors", {"name": "tolerant", "config": config})
    assert status == 201, body
    expected = "".join(f"line {i}\n" for i in range(6))
    wait_until(lambda: sink.exists() and sink.read_text() == expected, SPARK_WAIT_S, "the good lines", 0.5)

    def status_of() -> dict:
        return json.loads(worker.kctl("connect", "status", "tolerant", "--json").stdout)[0]

    wait_until(lambda: status_of()["lag"] == 0, 60, "the sink's commit", 0.5)
    shown = status_of()
    assert shown["tasks"][0]["state"] == "RUNNING"
    assert shown["metrics"]["sink-record-read-total"] == 8 and shown["metrics"]["sink-record-send-total"] == 6
    assert shown["metrics"]["total-records-skipped"] == 2
    assert shown["metrics"]["deadletterqueue-produce-requests"] == 2
    assert "serialization error" in shown["last_error"]
    table = worker.kctl("connect", "status").stdout.decode()
    assert "tolerant" in table and "DataException" in table
    letters = worker.kctl("consume", "mixed-dlq", "-e", "--json").stdout.decode().splitlines()
    assert [json.loads(line)["value"] for line in letters] == bad  # once each, as they were
    context = {h["key"]: h["value"] for h in json.loads(letters[0])["headers"]}
    assert context["__connect.errors.topic"] == "mixed" and context["__connect.errors.offset"] == "2"
    assert context["__connect.errors.connector.name"] == "tolerant"
    assert context["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert context["__connect.errors.class.name"] == "org.apache.kafka.connect.json.JsonConverter"
    assert context["__connect.errors.exception.class.name"] == "org.apache.kafka.connect.errors.DataException"
    assert context["__connect.errors.exception.message"].startswith("JsonConverter with schemas.enable")
    assert "__connect.errors.exception.stacktrace" in context and "__connect.errors.task.id" in context
    worker.kctl("connect", "delete", "tolerant")


def test_cluster_down_stops_the_worker(worker):
    down = json.loads(worker.kctl("cluster", "down", "--json").stdout)
    assert down["connect"] in ("stopped", "killed")
    assert localservice.running(worker.cluster_dir, localservice.CONNECT) is None
