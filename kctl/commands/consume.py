"""`kctl consume TOPIC`: records to stdout, formatted like kcat/rpk or as JSON lines."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Callable, Optional

import typer
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from kctl import console
from kctl.assignment import PartitionPlan, parse_partitions, plan
from kctl.client import Connection, connect, fetch_metadata
from kctl.errors import KctlError, exit_code_for
from kctl.exit_codes import ExitCode
from kctl.formatting import DEFAULT_FORMAT, FormatError, compile_format, record_json
from kctl.offsets import OffsetRange, OffsetSyntaxError, parse
from kctl.options import DEFAULT_TIMEOUT, Bootstrap, ClusterDir, Settings, Timeout

BATCH = 1000
POLL_TIMEOUT_S = 0.2

Render = Callable[[Message], bytes]


def consume(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to consume from.", show_default=False)],
    offset: Annotated[str, typer.Option(
        "--offset", "-o", metavar="OFFSET",
        help="Where to start (and stop): start, end, N, +N, -N (per partition), A:B, :end, "
             "@TIMESTAMP, @T1:T2, @-10m:end. Timestamps: 13-digit ms, 10-digit s, "
             "YYYY-MM-DD, RFC3339, or a duration before now.")] = "start",
    count: Annotated[Optional[int], typer.Option(
        "--num", "-n", min=1, show_default=False,
        help="Stop after this many records in total (over all partitions).")] = None,
    partition: Annotated[Optional[list[str]], typer.Option(
        "--partition", "-p", metavar="P[,P...]", show_default=False,
        help="Only these partitions (repeatable or comma-separated). Default: all.")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", "-f",
        help="Output format: %t topic, %p partition, %o offset, %k key, %v or %s value, "
             "%T timestamp ms, %h headers, %K/%S key/value length, %%; escapes \\n \\t \\\\.")
    ] = DEFAULT_FORMAT,
    json_output: Annotated[bool, typer.Option(
        "--json", help="One JSON object per record: topic, partition, offset, timestamp, key, "
                       "value, headers.")] = False,
    exit_at_end: Annotated[bool, typer.Option(
        "--exit", "-e", help="Exit at the end of every partition, as it was at start.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No summary on stderr.")] = False,
    bootstrap: Bootstrap = None, cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT, settings: Settings = None,
) -> None:
    """Print records of a topic; follows new records like `tail -f` unless -e, -n or a range ends it.

    Ends with "Processed a total of N messages" on stderr (unless -q).
    """
    spec, render = _compile(offset, fmt, json_output)
    partitions = parse_partitions(partition)
    conn = connect(bootstrap, cluster_dir, timeout, settings)
    bounded = exit_at_end or spec.stop is not None
    watch = ClusterWatch(conn)
    consumer = conn.consumer({"enable.partition.eof": bounded, "error_cb": watch})
    reader = None
    try:
        reader = Reader(consumer, topic, plan(consumer, conn, topic, partitions, spec, exit_at_end), render)
        reader.run(count, watch)
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    finally:
        consumer.close()
        if reader is not None and not quiet:
            console.info(f"Processed a total of {reader.count} messages")


def _compile(offset: str, fmt: str, json_output: bool) -> tuple[OffsetRange, Render]:
    """Check the offset spec and output format before touching the cluster."""
    if json_output and fmt != DEFAULT_FORMAT:
        raise KctlError("use either --format or --json, not both", ExitCode.USAGE)
    try:
        spec = parse(offset, now_ms=int(time.time() * 1000))
        return spec, record_json if json_output else compile_format(fmt)
    except (OffsetSyntaxError, FormatError) as exc:
        raise KctlError(str(exc), ExitCode.INVALID_INPUT) from None


class ClusterWatch:
    """librdkafka's error callback. It retries most errors by itself, but when it reports
    every broker down, kctl checks whether the cluster still answers and gives up if not."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.error: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.code() == KafkaError._ALL_BROKERS_DOWN or error.fatal():
            self.error = error

    def check(self, consumer: Consumer) -> None:
        error, self.error = self.error, None
        if error is None:
            return
        if error.fatal():
            raise KctlError(f"cannot consume: {error.str()}", exit_code_for(error))
        fetch_metadata(consumer, self.conn)


class Reader:
    """Prints the records of assigned partitions until every bounded partition is done.

    It does not care how partitions were chosen, so group consumption can reuse it.
    """

    def __init__(self, consumer: Consumer, topic: str, plans: list[PartitionPlan], render: Render):
        self.consumer = consumer
        self.render = render
        self.stops = {p.partition: p.stop for p in plans}
        self.active = {p.partition for p in plans if not p.empty}
        self.count = 0
        consumer.assign([TopicPartition(topic, p.partition, p.start) for p in plans if not p.empty])

    def run(self, limit: int | None, watch: ClusterWatch) -> None:
        out = sys.stdout.buffer
        while self.active and (limit is None or self.count < limit):
            want = BATCH if limit is None else min(BATCH, limit - self.count)
            chunks = self._batch(want)
            watch.check(self.consumer)
            if chunks:
                self.count += len(chunks)  # before writing: a reader who saw it, counts it
                out.write(b"".join(chunks))
                out.flush()

    def _batch(self, want: int) -> list[bytes]:
        """Rendered records of one consume() call, at most `want`; the per-record hot path."""
        chunks = []
        stops, active, render = self.stops, self.active, self.render
        for msg in self.consumer.consume(num_messages=want, timeout=POLL_TIMEOUT_S):
            if msg.error() is not None:
                self._on_event(msg)
                continue
            p, offset = msg.partition(), msg.offset()
            stop = stops[p]
            if p not in active or (stop is not None and offset >= stop):
                active.discard(p)
                continue
            chunks.append(render(msg))
            if stop is not None and offset + 1 >= stop:
                active.discard(p)
        return chunks

    def _on_event(self, msg: Message) -> None:
        """End of a partition closes it if bounded; any other partition error ends the run."""
        error, p = msg.error(), msg.partition()
        if error.code() == KafkaError._PARTITION_EOF:
            stop = self.stops.get(p)
            if stop is not None and msg.offset() >= stop:
                self.active.discard(p)
            return
        raise KctlError(f"cannot consume {msg.topic()}/{p}: {error.str()}", exit_code_for(error))
