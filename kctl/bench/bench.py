"""`kctl bench produce|consume`: throughput and latency, in the shape of Kafka's perf-test tools.

The summary line matches kafka-producer-perf-test's, so existing teaching material applies;
`--json` gives the same figures for scripts. Works against any bootstrap.
"""

from __future__ import annotations

import random
import time
from typing import Annotated

import typer

from kctl.bench.figures import latency_summary, rates
from kctl.consume.assignment import plan
from kctl.kafka import consumer as consumers
from kctl.kafka import topics, transactions
from kctl.kafka.client import Connection, Consumer, Producer, connect, produce_waiting
from kctl.kafka.delivery import LatencyRecorder
from kctl.kafka.errors import KafkaException, exit_code_for, from_kafka
from kctl.kafka.transactions import Transactions
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.offsets import END, START, OffsetRange
from kctl.shell.options import (
    Acks,
    AcksOption,
    Compression,
    CompressionOption,
    Json,
    TransactionalId,
)

BATCH = 10_000
TXN_SIZE = 10_000

app = typer.Typer(help="Measure produce and consume throughput and latency.", no_args_is_help=True)

Topic = Annotated[str, typer.Option("--topic", "-t", help="Topic to use.", show_default=False)]


@app.command("produce")
@connection_options()
def bench_produce(
    topic: Topic,
    records: Annotated[int, typer.Option("--records", min=1, help="Records to send.")] = 100_000,
    record_size: Annotated[int, typer.Option("--record-size", min=0, help="Value size in bytes.")] = 100,
    acks: AcksOption = Acks.ALL,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size", min=1, show_default=False, help="Max batch size in bytes (librdkafka batch.size)."
        ),
    ] = None,
    linger_ms: Annotated[
        float | None,
        typer.Option(
            "--linger-ms", min=0, show_default=False, help="How long to wait to fill batches (linger.ms)."
        ),
    ] = None,
    compression: CompressionOption = Compression.NONE,
    partitions: Annotated[
        int,
        typer.Option(
            "--partitions", "-p", help="Partitions if the topic must be created; -1: broker default."
        ),
    ] = -1,
    transactional_id: TransactionalId = None,
    txn_size: Annotated[
        int | None,
        typer.Option(
            "--txn-size",
            metavar="N",
            show_default=False,
            help=f"With --transactional-id: records per transaction. Default: {TXN_SIZE}.",
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Send records as fast as possible; report records/s, MB/s and send-to-ack latency.

    With --transactional-id the records go in transactions of --txn-size records, each
    committed before the next begins; the time includes the commits, and the figures add
    the number of transactions. Compare with `-X enable.idempotence=true` to see what
    transactions cost over idempotence alone.
    """
    transactions.check_options(transactional_id, txn_size, acks)
    conn = connect(options)
    if topics.ensure(conn, topics.validate_name(topic), partitions, -1):
        console.info(f"Created topic {topic}.")
    recorder = LatencyRecorder()
    txns = None if transactional_id is None else Transactions(transactional_id, conn.timeout)
    config = {
        "acks": acks.value,
        "compression.type": compression.value,
        "on_delivery": recorder,
        **transactions.producer_config(txns),
    }
    config.update({k: v for k, v in (("batch.size", batch_size), ("linger.ms", linger_ms)) if v is not None})
    elapsed = _timed_send(conn.producer(config), topic, record_size, records, txns, txn_size or TXN_SIZE)
    sent = len(recorder.latencies)
    figures = {
        "records": sent,
        "failed": len(recorder.errors),
        "record_size": record_size,
        **rates(sent, sent * record_size, elapsed),
        "latency_ms": latency_summary(recorder.latencies),
    }
    if txns is not None:
        figures["transactions"] = txns.committed
    _report(figures, json_output, _produce_line(figures))
    if recorder.errors:
        first = recorder.errors[0]
        raise KctlError(
            f"{len(recorder.errors)} deliveries failed, first: {first.str()}", exit_code_for(first)
        )


def _timed_send(
    producer: Producer, topic: str, record_size: int, records: int, txns: Transactions | None, txn_size: int
) -> float:
    """Seconds from the first send to the last acknowledgement (and commit); one payload, reused."""
    payload = bytes(random.Random(0).choices(range(65, 91), k=record_size))

    def send(batch: range) -> int:
        for i in batch:
            produce_waiting(producer, topic, payload)
            if not i & 1023:
                producer.poll(0)
        return len(batch)

    started = time.perf_counter()
    try:
        if txns is None:
            send(range(records))
        else:
            txns.run(
                producer,
                (range(start, min(start + txn_size, records)) for start in range(0, records, txn_size)),
                send,
            )
    except KafkaException as exc:
        raise from_kafka(exc, "send a record") from None
    while producer.flush(0.5) > 0:
        pass
    return time.perf_counter() - started


@app.command("consume")
@connection_options()
def bench_consume(
    topic: Topic,
    records: Annotated[
        int | None,
        typer.Option(
            "--records",
            min=1,
            show_default=False,
            help="Records to read. Default: everything in the topic when the run starts.",
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Read a topic from the start as fast as possible; report records/s and MB/s.

    Gives up (exit 1) when no record arrives for --timeout seconds before the count is reached.
    """
    conn = connect(options)
    consumer = conn.consumer({"fetch.wait.max.ms": 100})
    try:
        spec = OffsetRange(START, END if records is None else None)
        plans = plan(consumer, conn, topic, None, spec, exit_at_end=records is None)
        # without --records the plans stop at the end (exit_at_end)
        target = (
            records if records is not None else sum(p.stop - p.start for p in plans if p.stop is not None)
        )
        if target == 0:
            raise KctlError(f"topic {topic!r} has no records to read; try `kctl bench produce` first")
        started = time.perf_counter()
        consumers.assign(consumer, topic, {p.partition: p.start for p in plans})
        count, nbytes = _drain(consumer, conn, target)
        elapsed = time.perf_counter() - started
    finally:
        consumer.close()
    figures = {"records": count, **rates(count, nbytes, elapsed)}
    _report(
        figures,
        json_output,
        f"{count} records received, {figures['records_per_s']:.1f} records/sec "
        f"({figures['mb_per_s']:.2f} MB/sec) in {elapsed:.2f} s.",
    )


def _drain(consumer: Consumer, conn: Connection, target: int) -> tuple[int, int]:
    """Count records and bytes until `target`; idle longer than the timeout is an error."""
    count = nbytes = 0
    last_progress = time.monotonic()
    while count < target:
        batch = consumer.consume(num_messages=min(BATCH, target - count), timeout=0.2)
        for msg in batch:
            error = msg.error()
            if error is not None:
                raise KctlError(f"cannot consume: {error.str()}", exit_code_for(error))
            count += 1
            nbytes += len(msg.value() or b"") + len(msg.key() or b"")
        if batch:
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > conn.timeout:
            raise KctlError(f"only {count} of {target} records arrived; none for {conn.timeout:g}s")
    return count, nbytes


def _produce_line(f: dict) -> str:
    lat = f["latency_ms"]
    line = f"{f['records']} records sent, {f['records_per_s']:.1f} records/sec ({f['mb_per_s']:.2f} MB/sec)"
    if lat["avg"] is not None:
        line += (
            f", {lat['avg']:.2f} ms avg latency, {lat['max']:.2f} ms max latency, "
            f"{lat['p50']:.1f} ms 50th, {lat['p95']:.1f} ms 95th, {lat['p99']:.1f} ms 99th, "
            f"{lat['p999']:.1f} ms 99.9th"
        )
    if "transactions" in f:
        line += f", {f['transactions']} transactions committed"
    return line + "."


def _report(figures: dict, json_output: bool, line: str) -> None:
    if json_output:
        console.print_json(figures)
    else:
        print(line, flush=True)
