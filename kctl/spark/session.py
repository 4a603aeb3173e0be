"""A local SparkSession set up the way the kctl format needs it, and the cluster to use.

Spark starts its Python workers with $PYSPARK_PYTHON (default: `python3` on PATH), which is
often not the interpreter that has kctl, pyarrow and pyspark installed; workers then fail
with ModuleNotFoundError. So the session's workers get this interpreter unless the caller
chose one. Used by `kctl sql`, the benchmark and the examples.
"""

from __future__ import annotations

import os
import sys
import tempfile

from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession

import kctl.spark
from kctl.kafka import clientprops
from kctl.kafka.bootstrap import resolve_bootstrap, resolve_cluster_dir

# Spark logs WARN and INFO lines to stderr from the moment the JVM starts; a command-line
# tool should print only its own messages and real errors.
_QUIET_LOG4J = """\
rootLogger.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def local_session(app_name: str = "kctl", cores: str = "*", quiet: bool = True) -> SparkSession:
    """A `local[cores]` session on loopback with the kctl format registered."""
    return spark_session(f"local[{cores}]", app_name, quiet)


def spark_session(master: str, app_name: str = "kctl", quiet: bool = True) -> SparkSession:
    """A session of `master` (`local[N]`, `spark://HOST:PORT`) with the kctl format registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
    )
    if not quiet:
        spark = builder.getOrCreate()
    else:
        # The JVM reads the file once, at start-up.
        with tempfile.NamedTemporaryFile("w", suffix=".properties", prefix="kctl-log4j2-") as conf:
            conf.write(_QUIET_LOG4J)
            conf.flush()
            spark = builder.config(
                "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={conf.name}"
            ).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
            # They log every failed query as a JSON document; the exception says it already.
            PySparkLogger.getLogger(name).disabled = True
    kctl.spark.register(spark)
    return spark


def cluster_bootstrap(flag: str | None = None) -> str:
    """The brokers kctl itself would use: `flag`, else $KCTL_BOOTSTRAP, else the live brokers
    of the local cluster in $KCTL_HOME (or ~/.kctl), the one `kctl cluster up` started."""
    return resolve_bootstrap(flag, resolve_cluster_dir(None)).servers


def cluster_client(flag: str | None = None) -> dict[str, str]:
    """librdkafka settings for the cluster kctl would use: its bootstrap, and for a secured
    local cluster its admin.properties (kctl.kafka.clientprops)."""
    bootstrap = resolve_bootstrap(flag, resolve_cluster_dir(None))
    return {"bootstrap.servers": bootstrap.servers, **clientprops.for_bootstrap(bootstrap, None)}
