"""A streaming query SIGKILLed in the middle of a micro-batch, then restarted from its
checkpoint, leaves every source record in the sink topic exactly once.

The query first runs in its own process group (driver, JVM, Python workers); the whole
group is killed while a micro-batch has delivered records to the sink that Spark has not
committed. The restart, in the tests' SparkSession from the same checkpoint, replays that
batch, and the sink must recognise what was already delivered.
"""

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.cluster_harness import wait_until
from tests.kafka_helpers import create_topic
from tests.spark.conftest import SPARK_ENV
from tests.spark.copy_stream import start
from tests.spark.helpers import TIMEOUT_S, consume_all, kill_group, produce, values

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]
RECORDS, PER_TRIGGER = 2000, 400
REPO = Path(__file__).resolve().parents[2]


@contextmanager
def copy_stream(bootstrap, checkpoint: Path, log: Path):
    """The pipeline process; its whole process group is SIGKILLed on the way out."""
    command = [
        sys.executable,
        "-m",
        "tests.spark.copy_stream",
        bootstrap,
        "src",
        "dst",
        str(checkpoint),
        str(PER_TRIGGER),
    ]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            start_new_session=True,
            env={**os.environ, **SPARK_ENV},
        )
    try:
        yield proc
    finally:
        kill_group(proc)


def committed_records(checkpoint: Path) -> int:
    """Source records in the micro-batches Spark has committed (its offsets start at 0)."""
    done = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")]
    if not done:
        return 0
    ends = json.loads((checkpoint / "offsets" / str(max(done))).read_text().splitlines()[-1])
    return sum(ends["src"].values())


def sink_records(admin: AdminClient) -> int:
    specs = {TopicPartition("dst", p): OffsetSpec.latest() for p in (0, 1)}
    return sum(f.result().offset for f in admin.list_offsets(specs).values())


def test_a_killed_query_restarted_from_its_checkpoint_writes_every_record_once(spark, cluster, tmp_path):
    create_topic(cluster.bootstrap, "src", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    create_topic(cluster.bootstrap, "dst", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    expected = [f"r{i}".encode() for i in range(RECORDS)]
    produce(cluster.bootstrap, "src", [(str(i % 10).encode(), v) for i, v in enumerate(expected)])
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "pipeline.log"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def mid_batch():
        assert proc.poll() is None, f"the pipeline exited early:\n{log.read_text()[-3000:]}"
        delivered = sink_records(admin)
        return delivered > committed_records(checkpoint) and delivered

    with copy_stream(cluster.bootstrap, checkpoint, log) as proc:
        before_kill = wait_until(mid_batch, 180, "a micro-batch in flight", interval=0.01)
        os.killpg(proc.pid, signal.SIGKILL)
    assert 0 < before_kill < RECORDS

    restarted = start(spark, cluster.bootstrap, "src", "dst", str(checkpoint), str(PER_TRIGGER))
    assert restarted.awaitTermination(180) and restarted.exception() is None
    assert sorted(values(consume_all(cluster.bootstrap, "dst"))) == sorted(expected)
