"""One local SparkSession per test worker, shared by the few end-to-end Spark tests (the
parallel runs keep them all on one worker: tests/conftest.py).

Spark starts Python workers with $PYSPARK_PYTHON; they must be this interpreter (the one
with kctl, pyarrow and pyspark installed), or every query fails in its workers. Starting a
JVM costs seconds on a small machine, so there is exactly one; the rest of the data source
is tested as plain Python without it (tests/kctl/spark, and on real brokers tests/cluster/spark).
"""

import os
import sys

import pytest

SPARK_ENV = {
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
    "SPARK_LOCAL_IP": "127.0.0.1",
}


@pytest.fixture(scope="session")
def spark():
    os.environ.update(SPARK_ENV)
    from pyspark.sql import SparkSession

    import kctl.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kctl-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kctl.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def drop_cached_producer():
    """The sink keeps one idempotent producer per process; a test's cluster stops with the
    test, so the producer must not outlive it (it would keep dialling a closed port)."""
    yield
    from kctl.spark.produce import _forget_producer

    _forget_producer()
