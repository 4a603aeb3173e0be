"""`kctl sql` through the real CLI: a streaming aggregate over a live topic, updated as
records arrive, stopped with Ctrl-C."""

import json
import os
import selectors
import signal
import subprocess
import time

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.kafka_helpers import create_topic
from tests.kctl.cli import kctl_command, kctl_env
from tests.spark.conftest import SPARK_ENV
from tests.spark.helpers import TIMEOUT_S, kill_group, produce

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]
QUERY = "SELECT key AS user, count(*) AS clicks FROM clicks GROUP BY key"


class Lines:
    """stdout of a process, line by line, each wait bounded by a deadline."""

    def __init__(self, proc: subprocess.Popen):
        self._proc = proc
        self._fd = proc.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._partial = b""
        self.seen: list[str] = []

    def until(self, predicate, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.seen):
            left = deadline - time.monotonic()
            assert left > 0, f"timed out; output so far: {self.seen[-10:]}"
            if self._selector.select(min(left, 1.0)):
                chunk = os.read(self._fd, 65536)
                assert chunk, f"kctl sql exited with {self._proc.wait()}: {self._proc.stderr.read()[-2000:]}"
                *lines, self._partial = (self._partial + chunk).split(b"\n")
                self.seen += [line.decode() for line in lines]


def latest_counts(lines: list[str]) -> dict:
    """The last count printed for each user (each micro-batch prints the whole result)."""
    counts = {}
    for line in lines:
        row = json.loads(line)
        counts[row["user"]] = row["clicks"]
    return counts


def test_kctl_sql_prints_a_live_aggregate_and_stops_on_ctrl_c(cluster, tmp_path):
    create_topic(cluster.bootstrap, "clicks", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "clicks", [(b"ann", b"/a")] * 3 + [(b"bob", b"/b")] * 2)
    command = kctl_command(
        "sql",
        QUERY,
        "--trigger",
        "continuous",
        "--format",
        "json",
        "-b",
        cluster.bootstrap,
        "--checkpoint",
        str(tmp_path / "ck"),
    )
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=kctl_env({**SPARK_ENV, "KCTL_HOME": str(tmp_path / "none")}),
        start_new_session=True,
    )
    try:
        out = Lines(proc)
        out.until(lambda seen: latest_counts(seen) == {"ann": 3, "bob": 2}, 150)
        produce(cluster.bootstrap, "clicks", [(b"ann", b"/c")] * 2 + [(b"cy", b"/d")])
        out.until(lambda seen: latest_counts(seen) == {"ann": 5, "bob": 2, "cy": 1}, 60)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == ExitCode.INTERRUPTED
    finally:
        kill_group(proc)
