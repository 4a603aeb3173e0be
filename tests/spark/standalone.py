"""A Spark standalone cluster for a test: a master and its workers, each a `spark-class`
process of the pyspark installation (no Spark download), on loopback and free ports, stopped
with their executors when the test ends, even when it fails.

Which worker ran tasks is read from the executors' own logs in each worker's directory
(`WORKER_DIR/<app id>/<executor id>/stderr`), where every executor says "Running task".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from tests.cluster_harness import free_ports, wait_until

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
START_S = 90.0  # a JVM each, on two busy cores


@dataclass(frozen=True)
class StandaloneCluster:
    master: str  # spark://HOST:PORT
    worker_dirs: list[Path]

    def tasks_run(self) -> list[int]:
        """How many tasks each worker's executors started, in worker order."""
        return [
            sum(log.read_text(errors="replace").count("Running task") for log in directory.glob("*/*/stderr"))
            for directory in self.worker_dirs
        ]


@contextmanager
def spark_standalone(home: Path, workers: int = 2, cores: int = 1) -> Iterator[StandaloneCluster]:
    port, webui, *worker_ports = free_ports(2 + 2 * workers)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_HOME", None)  # spark-class finds the pyspark installation's own
    master = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []
    home.mkdir(parents=True, exist_ok=True)

    def start(name: str, *argv: str) -> None:
        log = open(home / f"{name}.log", "wb")  # noqa: SIM115 - the process writes it until stopped
        processes.append(
            subprocess.Popen(
                [str(SPARK_CLASS), *argv],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    try:
        start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(webui),
        )
        dirs = [home / f"worker-{n}" for n in range(workers)]
        for n, directory in enumerate(dirs):
            directory.mkdir(parents=True)
            start(
                f"worker-{n}",
                "org.apache.spark.deploy.worker.Worker",
                master,
                "--host",
                "127.0.0.1",
                "--port",
                str(worker_ports[2 * n]),
                "--webui-port",
                str(worker_ports[2 * n + 1]),
                "--cores",
                str(cores),
                "--memory",
                "1g",
                "--work-dir",
                str(directory),
            )
        wait_until(
            lambda: _alive_workers(webui) == workers, START_S, f"{workers} Spark workers registered", 0.5
        )
        yield StandaloneCluster(master, dirs)
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # a worker's executors are in its group
            except ProcessLookupError:
                pass
            process.wait()


def _alive_workers(webui: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=2) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except OSError:
        return 0
