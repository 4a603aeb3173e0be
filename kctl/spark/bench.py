"""Records per second through topic -> Spark -> topic, in `kctl bench` style.

    python -m kctl.spark.bench --records 1000000 [-b HOST:PORT] [--json]

Fills a fresh input topic, warms Spark up on a small copy (JVM, Python workers, cached
producers: costs a long-running pipeline pays once), then times two queries on the full
input: a batch read of every record (the source alone) and a streaming copy to a fresh
output topic with Trigger.AvailableNow (source, exactly-once sink and Spark's micro-batch
machinery). The copy is checked record for record count before figures are printed. The
benchmark's topics are deleted at the end.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid

from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from kctl.bench.figures import rates
from kctl.shell import console
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.options import Subscription
from kctl.spark.produce import Outbox
from kctl.spark.session import cluster_client, local_session
from kctl.spark.views import client_options

WARM_UP_RECORDS = 20_000


def main() -> None:
    args = _arguments()
    client = cluster_client(args.bootstrap)
    admin = AdminClient({**client})  # a new dict: AdminClient declares dict[str, str | int | float | bool]
    run = uuid.uuid4().hex[:8]
    names = [f"spark-bench-{run}-{suffix}" for suffix in ("warm-in", "warm-out", "in", "out")]
    _create(admin, names, args.partitions)
    try:
        _fill(client, names[0], WARM_UP_RECORDS, args.record_size)
        _fill(client, names[2], args.records, args.record_size)
        spark = local_session("kctl-bench")
        _copy(spark, client, names[0], names[1], args.max_per_trigger)
        read = _timed(lambda: _read(spark, client, names[2]), args)
        copy = _timed(lambda: _copy(spark, client, names[2], names[3], args.max_per_trigger), args)
        figures = {
            "records": args.records,
            "record_size": args.record_size,
            "partitions": args.partitions,
            "read": read,
            "copy": copy,
        }
        _check(client, names[3], args.records)
        spark.stop()
    finally:
        admin.delete_topics(names)
    _report(figures, args.json)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kctl.spark.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-size", type=int, default=100, help="value size in bytes")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--max-per-trigger", type=int, help="maxOffsetsPerTrigger of the copy")
    parser.add_argument("-b", "--bootstrap", help="default: $KCTL_BOOTSTRAP, else the local cluster")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser.parse_args()


def _create(admin: AdminClient, names: list[str], partitions: int) -> None:
    for future in admin.create_topics([NewTopic(n, partitions, -1) for n in names]).values():
        future.result()


def _fill(client: dict[str, str], topic: str, records: int, size: int) -> None:
    payload = b"x" * size
    with Outbox({**client, "linger.ms": "20"}) as outbox:
        for _ in range(records):
            outbox.send(topic, None, None, payload, [])


def _read(spark: SparkSession, client: dict[str, str], topic: str) -> int:
    return (
        spark.read.format("kctl").options(**client_options(client)).option("subscribe", topic).load().count()
    )


def _copy(
    spark: SparkSession, client: dict[str, str], source: str, sink: str, per_trigger: int | None
) -> int:
    reader = (
        spark.readStream.format("kctl")
        .options(**client_options(client))
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
    )
    if per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", per_trigger)
    with tempfile.TemporaryDirectory(prefix="kctl-bench-") as checkpoint:
        query = (
            reader.load()
            .select("key", "value")
            .writeStream.format("kctl")
            .options(**client_options(client))
            .option("topic", sink)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    return sum(p["numInputRows"] for p in query.recentProgress)


def _timed(work, args: argparse.Namespace) -> dict:
    started = time.perf_counter()
    records = work()
    elapsed = time.perf_counter() - started
    return {"records": records, **rates(records, records * args.record_size, elapsed)}


def _check(client: dict[str, str], topic: str, expected: int) -> None:
    cluster = ClusterOffsets(client)
    written = sum(cluster.latest(cluster.partitions(Subscription(topics=(topic,)))).values())
    if written != expected:
        raise SystemExit(f"the copy holds {written} records, not {expected}")


def _report(figures: dict, json_output: bool) -> None:
    if json_output:
        console.print_json(figures)
        return
    for name, what in (("read", "read by a batch query"), ("copy", "copied topic -> Spark -> topic")):
        f = figures[name]
        print(
            f"{f['records']} records {what}, {f['records_per_s']:.1f} records/sec "
            f"({f['mb_per_s']:.2f} MB/sec) in {f['elapsed_s']:.2f} s.",
            flush=True,
        )


if __name__ == "__main__":
    main()
