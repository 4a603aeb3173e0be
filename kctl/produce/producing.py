"""What `kctl produce TOPIC` does with its options: one record per input line, from a shell pipe
or a file, optionally in transactions; a line is a value (or key and value), or a JSON record
as `kctl consume --json` writes them."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from enum import Enum
from functools import partial
from io import BufferedIOBase
from itertools import chain
from pathlib import Path
from typing import Protocol, cast

import typer

from kctl.kafka import delivery, transactions
from kctl.kafka.client import (
    Connection,
    Producer,
    connect,
    fetch_metadata,
    find_topic,
    produce_waiting,
    topic_metadata,
)
from kctl.kafka.delivery import STALLED, DeliveryPoller, DeliveryStopped, DeliveryTally
from kctl.kafka.errors import KafkaError, KafkaException, from_kafka
from kctl.kafka.transactions import Transactions
from kctl.produce import insync, linebatches, pacing, schemaencoding
from kctl.shell import console
from kctl.shell.connectionoptions import ConnectionOptions
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.keyvalue import parse_pairs
from kctl.shell.options import Acks, Compression
from kctl.shell.recordjson import JsonLines, ProduceArgs

INTERRUPT_FLUSH_S = 5.0
TICK_EVERY = 1024  # records between progress bar updates; a power of two for the mask

Splitter = Callable[[bytes], tuple[bytes | None, bytes]]


class InputFormat(str, Enum):
    """What an input line is: a value (text), or a record as `kctl consume --json` writes it."""

    TEXT = "text"
    JSON = "json"


class Records(Protocol):
    """How input lines become records, and the bad line (if any) that ended them."""

    @property
    def error(self) -> KctlError | None: ...

    def records(self, lines: Iterable[bytes]) -> Iterator[ProduceArgs]: ...


@dataclass(frozen=True)
class ProduceRequest:
    """`kctl produce`'s options as given (see its --help); produce() checks them together."""

    topic: str
    key: str | None  # -k
    key_delimiter: str | None  # -K
    headers: tuple[str, ...]  # -H KEY=VALUE
    partition: int | None  # -p
    input_format: InputFormat  # -J
    acks: Acks
    compression: Compression
    file: Path | None  # -f; None: stdin
    json_output: bool
    transactional_id: str | None
    txn_size: int | None
    rate: str | None  # --rate N[/s]
    value_schema: schemaencoding.SchemaChoice
    key_schema: schemaencoding.SchemaChoice
    registry: str | None
    options: ConnectionOptions


def produce(request: ProduceRequest) -> None:
    """Send the input's records, then report; options that do not go together, and a topic or
    partition the cluster does not have, are refused before any input is read."""
    topic, timeout = request.topic, request.options.timeout
    records_for = _records(
        request.input_format, request.key, request.key_delimiter, request.partition, request.headers
    )
    encoders = schemaencoding.encoders(
        topic,
        request.value_schema,
        request.key_schema,
        request.registry,
        request.options.cluster_dir,
        timeout,
    )
    transactions.check_options(request.transactional_id, request.txn_size, request.acks)
    per_second = None if request.rate is None else pacing.parse_rate(request.rate)
    txns = None if request.transactional_id is None else Transactions(request.transactional_id, timeout)
    tally = DeliveryTally(topic, request.json_output, stop_at_rejection=txns is not None)
    with ExitStack() as stack:
        stream, progress = _open_input(stack, request.file)
        tick, every = _ticker(progress, per_second)
        conn = connect(request.options)
        producer = _producer(conn, request, txns, tally)
        source = records_for(_check_target(producer, conn, topic, request.partition, request.acks))
        if encoders is not None:
            source = encoders.wrap(source)
        explain = partial(_delivery_error, conn=conn, topic=topic, acks=request.acks)
        send = partial(_send, producer=producer, topic=topic, tally=tally, tick=tick, every=every)
        if txns is None:
            _produce_stream(producer, lambda: send(source.records(stream)), tally, txns, explain)
        else:
            batches = _record_batches(linebatches.batches(stream, request.txn_size), source)
            run = partial(txns.run, producer, batches, send)
            _produce_stream(producer, run, tally, txns, explain)
    console.info(_summary(tally, txns))
    if source.error is not None:
        raise source.error
    if tally.first_error is not None:
        raise explain(tally.first_error, None)


# Keys are placed by Kafka's own (Java) partitioner, so kctl and other clients agree. Keyless
# records are spread record by record: librdkafka's default sticks to one partition per
# batch, which would put a short `seq 100 | kctl produce` entirely in one partition.
PRODUCER_DEFAULTS = {"partitioner": "murmur2_random", "sticky.partitioning.linger.ms": 0}


def _producer(
    conn: Connection, request: ProduceRequest, txns: Transactions | None, tally: DeliveryTally
) -> Producer:
    """A producer with the request's acks and compression, reporting deliveries to `tally`; a
    record unacknowledged after --timeout fails."""
    return conn.producer(
        PRODUCER_DEFAULTS
        | transactions.producer_config(txns)
        | {
            "acks": request.acks.value,
            "compression.type": request.compression.value,
            "on_delivery": tally,
            "message.timeout.ms": int(conn.timeout * 1000),
        }
    )


def _records(
    input_format: InputFormat,
    key: str | None,
    delimiter: str | None,
    partition: int | None,
    header: tuple[str, ...],
) -> Callable[[int], Records]:
    """How lines become records, given the topic's partition count (known once connected);
    refuses options that do not go with the input format before connecting."""
    headers = [(k, v.encode()) for k, v in parse_pairs(list(header), "--header")]
    if input_format is InputFormat.JSON:
        if key is not None or delimiter is not None:
            raise KctlError(
                "--input-format json takes keys from the records: drop --key and --key-delimiter",
                ExitCode.USAGE,
            )
        return partial(JsonLines, partition, headers)
    if key is not None and delimiter is not None:
        raise KctlError("use either --key or --key-delimiter, not both", ExitCode.USAGE)
    if delimiter == "":
        raise KctlError("--key-delimiter must not be empty", ExitCode.INVALID_INPUT)
    text = TextLines(_splitter(key, delimiter), _record_extras(partition, headers))
    return lambda _partitions: text


class TextLines:
    """--input-format text: each line is a value, or a key and a value split by -K."""

    error: KctlError | None = None  # every line is a record

    def __init__(self, split: Splitter, extra: dict):
        self.split = split
        self.extra = extra

    def records(self, lines: Iterable[bytes]) -> Iterator[ProduceArgs]:
        split, extra = self.split, self.extra
        for line in lines:
            if line.endswith(b"\n"):
                line = line[:-1]
            key, value = split(line)
            yield value, key, extra


def _record_batches(batches: Iterable[Iterable[bytes]], source: Records) -> Iterator[Iterable[ProduceArgs]]:
    """Batches of lines as batches of records, up to a bad line: the records before it in its
    batch are still sent, then no more input is read. A batch is only started once its first
    line is a record, so a bad line never leaves an empty transaction behind."""
    for batch in batches:
        records = source.records(batch)
        first = next(records, None)
        if first is None:  # the batch's first line was bad (batches are never empty)
            return
        yield chain((first,), records)
        if source.error is not None:
            return


def _splitter(key: str | None, delimiter: str | None) -> Splitter:
    if delimiter is not None:
        delim = delimiter.encode()

        def split(line: bytes) -> tuple[bytes | None, bytes]:
            k, sep, value = line.partition(delim)
            return (k, value) if sep else (None, line)

        return split
    fixed = None if key is None else key.encode()
    return lambda line: (fixed, line)


def _record_extras(partition: int | None, headers: list[tuple[str, bytes]]) -> dict:
    """produce() keyword arguments that are the same for every record."""
    extra: dict = {}
    if partition is not None:
        extra["partition"] = partition
    if headers:
        extra["headers"] = headers
    return extra


def _check_target(producer: Producer, conn: Connection, topic: str, partition: int | None, acks: Acks) -> int:
    """Fail fast (exit 3, 4 or 6) instead of letting every record time out; returns how many
    partitions the topic has."""
    meta = topic_metadata(producer, conn, topic)
    if partition is not None and partition not in meta.partitions:
        raise KctlError(
            f"topic {topic!r} has no partition {partition} (it has 0..{len(meta.partitions) - 1})",
            ExitCode.NOT_FOUND,
        )
    if acks is Acks.ALL:
        refused = insync.refusal(conn, meta, None if partition is None else [partition])
        if refused is not None:
            raise refused
    return len(meta.partitions)


def _delivery_error(
    error: KafkaError, partition: int | None, conn: Connection, topic: str, acks: Acks
) -> KctlError:
    """The one line for failed deliveries. A stalled acks=all delivery is explained by the ISR
    when it is below min.insync.replicas (librdkafka only reports the timeout); if the
    cluster cannot tell, the delivery error stands."""
    if error.code() in STALLED and acks is Acks.ALL:
        try:
            meta = find_topic(fetch_metadata(conn.admin(), conn, topic), topic)
            refused = insync.refusal(conn, meta, None if partition is None else [partition])
        except KctlError:
            refused = None
        if refused is not None:
            return refused
    return delivery.failure(error, conn.timeout)


def _ticker(progress: Callable[[], None], rate: float | None) -> tuple[Callable[[int], None], int]:
    """What the send loop calls every `every` records with how many it sent: the progress
    bar, and with --rate a token bucket that sleeps to hold the rate."""
    if rate is None:
        return lambda _sent: progress(), TICK_EVERY
    bucket = pacing.TokenBucket(rate, pacing.batch_size(rate))

    def tick(sent: int) -> None:
        progress()
        bucket.take(sent)

    return tick, bucket.burst


def _open_input(stack: ExitStack, file: Path | None) -> tuple[BufferedIOBase, Callable[[], None]]:
    """The byte stream to read, and a progress callback (a no-op unless it can show a bar)."""
    if file is None:
        if sys.stdin.isatty():
            console.info("Reading records from the terminal, one per line; Ctrl-D to finish.")
        # typeshed says BinaryIO; it is a BufferedReader (a BytesIO under a test runner)
        return cast(BufferedIOBase, sys.stdin.buffer), lambda: None
    try:
        stream = stack.enter_context(open(file, "rb"))
    except OSError as exc:
        raise KctlError(f"cannot read {file}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    if not console.stderr().is_terminal:
        return stream, lambda: None
    from rich.progress import Progress  # a bar for a file on a terminal only

    progress = stack.enter_context(Progress(console=console.stderr(), transient=True))
    task = progress.add_task(f"producing {file.name}", total=file.stat().st_size)
    return stream, lambda: progress.update(task, completed=stream.tell())


def _produce_stream(
    producer: Producer,
    send: Callable[[], object],
    tally: DeliveryTally,
    txns: Transactions | None,
    explain: Callable[[KafkaError, int | None], KctlError],
) -> None:
    """Send every line and wait for every report. On Ctrl-C without transactions, give records
    in flight a bounded time and drop the rest; with them, the open transaction has been
    aborted by then. Either way report what happened and exit 130. A stalled delivery drops
    the records in flight at once (they count as failed) and explains the stall."""
    try:
        with DeliveryPoller(producer):
            send()
        _drain(producer)
    except DeliveryStopped as stop:
        producer.purge()
        producer.flush(0)  # the reports of purged records
        console.info(_summary(tally, txns))
        raise explain(stop.args[0], stop.partition) from None
    except KeyboardInterrupt:
        if txns is None:
            console.info(f"Interrupted: waiting up to {INTERRUPT_FLUSH_S:g}s for records in flight.")
            producer.flush(INTERRUPT_FLUSH_S)
            producer.purge()
        producer.flush(0)  # the reports of purged (or aborted) records
        console.info(_summary(tally, txns))
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    except KctlError:  # a transaction failed and was aborted
        console.info(_summary(tally, txns))
        raise
    except KafkaException as exc:  # fatal, from the poller: e.g. fenced by a newer producer
        console.info(_summary(tally, txns))
        doing = "produce"
        raise (from_kafka(exc, doing) if txns is None else txns.failure(exc.args[0], doing)) from None


def _summary(tally: DeliveryTally, txns: Transactions | None) -> str:
    return tally.summary() if txns is None else f"{tally.summary()}; {txns.summary()}"


def _send(
    records: Iterable[ProduceArgs],
    producer: Producer,
    topic: str,
    tally: DeliveryTally,
    tick: Callable[[int], None],
    every: int,
) -> int:
    """The hot loop: as little Python per record as possible (callbacks run in the poller).
    Calls tick(n) after every `every` records (a power of two) and for the rest at the end.
    Returns how many records it sent."""
    count = 0
    mask = every - 1
    for value, key, extra in records:
        try:
            produce_waiting(producer, topic, value, key, **extra)
        except KafkaException as exc:
            tally.rejected(exc.args[0])
        count += 1
        if not count & mask:
            tick(every)
    tick(count & mask)
    return count


def _drain(producer: Producer) -> None:
    """Wait for every delivery report (bounded by message.timeout.ms), staying Ctrl-C-able."""
    while producer.flush(0.5) > 0:
        pass
