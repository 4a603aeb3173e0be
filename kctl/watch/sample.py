"""`kctl watch TOPIC --sample`: the latest record of each partition, decoded to JSON when it was
written with a schema registry's schema (Confluent's wire format), as `kctl consume` decodes it.

A sample is a glance, not a consumer, so it is read cheaply: one consumer for the whole watch,
assigned to each partition one record before its end (the last stable offset, what a
read_committed consumer reaches, else the high watermark, as the dashboard shows them), a
partition read again only when that end has moved, at most once per refresh, and only the
first MAX_PARTITIONS partitions. In the live display it reads on a background thread, as
groups are polled, so a dead leader delays the sample and never the screen. The decoder's
warnings are kept for the SAMPLE section: written to stderr they would tear the live display.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kctl.consume.formatting import record_doc
from kctl.consume.schemadecoding import SchemaDecoder, schema_decoder
from kctl.kafka.client import Connection
from kctl.kafka.record import Record
from kctl.shell.connectionoptions import ConnectionOptions
from kctl.shell.errors import KctlError

if TYPE_CHECKING:
    pass

# Past this many partitions the sample shows the first ones and says how many it left out.
MAX_PARTITIONS = 20
# A transactional partition ends with a commit marker, not a record: when the offset before
# the end holds none, the sample looks this many offsets further back, once.
LOOKBACK = 16
POLL_S = 0.05
# A read ends at the partition's end (its EOF event), so a fetch there need not wait for new
# records: librdkafka's default waits 500 ms, and a fetch still in flight when the consumer
# is assigned again delays the next read by as much.
SETTINGS = {
    "enable.partition.eof": True,
    "fetch.wait.max.ms": 10,
    "isolation.level": "read_committed",
    "auto.offset.reset": "earliest",  # an offset retention removed since: from the log start
}

Sample = dict[str, Any]


@dataclass
class CollectingDecoder:
    """A SchemaDecoder whose warnings (one per schema id) are kept for the SAMPLE section
    instead of printed: stderr lines would tear the Rich Live screen."""

    decoder: SchemaDecoder
    warnings: list[str]

    def decode(self, data: bytes | None) -> tuple[int, Any] | None:
        return self.decoder.decode(data)


def decoder(registry: str | None, options: ConnectionOptions) -> CollectingDecoder | None:
    """A decoder when a registry is known, found as `kctl consume` finds it; None shows framed
    records as bytes."""
    warnings: list[str] = []
    found = schema_decoder(registry, options, warnings.append)
    return None if found is None else CollectingDecoder(found, warnings)


class SampleSource:
    """Reads the latest record of the partitions of `topic` that moved since the last read,
    with one consumer made on first use and kept; `fetch` gives the whole sample."""

    def __init__(self, connect: Callable[[], Connection], topic: str, decode: CollectingDecoder | None):
        self._connect = connect
        self._conn: Connection | None = None
        self._consumer: Consumer | None = None
        self.topic = topic
        self.decoder = decode
        self._rows: dict[int, dict] = {}  # partition -> its row
        self._read_at: dict[int, int] = {}  # partition -> the end its row was read at

    def fetch(self, snap: dict) -> Sample:
        """The sample for this snapshot: a row per partition (the first MAX_PARTITIONS), the
        partitions left out, the decoder's warnings, or why there is none."""
        partitions: list[dict] = next(
            (t["partitions"] for t in snap["topics"] if t["topic"] == self.topic), []
        )
        shown = partitions[:MAX_PARTITIONS]
        doc: Sample = {"topic": self.topic, "partitions_left_out": len(partitions) - len(shown)}
        try:
            self._refresh(shown)
        except KctlError as exc:
            doc["error"] = exc.message
        except KafkaException as exc:  # an assignment refused: the rows read before stay
            doc["error"] = f"cannot read {self.topic}: {exc.args[0].str()}"
        doc["partitions"] = [
            self._rows.get(
                p["partition"], {"partition": p["partition"], "offset": None, "note": "not read yet"}
            )
            for p in shown
        ]
        doc["warnings"] = [] if self.decoder is None else list(self.decoder.warnings)
        return doc

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _refresh(self, partitions: list[dict]) -> None:
        """Reads the partitions whose end moved; an empty one needs no request."""
        stale = {}
        for partition in partitions:
            p, (start, end) = partition["partition"], _bounds(partition)
            if end is None or self._read_at.get(p) == end:
                continue
            if end <= start:
                self._rows[p], self._read_at[p] = {"partition": p, "offset": None, "note": "empty"}, end
            else:
                stale[p] = (start, end)
        if stale:
            self._read(stale)

    def _read(self, bounds: dict[int, tuple[int, int]]) -> None:
        """New rows for these partitions (log start, end); one that failed is read again at
        the next refresh."""
        found, errors = self._latest_records(bounds)
        for p, (_, end) in bounds.items():
            if p in found:
                self._rows[p], self._read_at[p] = self._record_row(found[p]), end
            elif p in errors:
                self._rows[p] = {"partition": p, "offset": None, "error": errors[p]}
                self._read_at.pop(p, None)
            else:
                note = f"no record below offset {end} (transaction markers or aborted records)"
                self._rows[p], self._read_at[p] = {"partition": p, "offset": None, "note": note}, end

    def _latest_records(
        self, bounds: dict[int, tuple[int, int]]
    ) -> tuple[dict[int, Message], dict[int, str]]:
        """The record before each end; where that offset holds none (a transaction's commit
        marker), the last one of the LOOKBACK offsets before it."""
        consumer, timeout = self._consumer_made()
        found, errors = latest(consumer, self.topic, {p: end - 1 for p, (_, end) in bounds.items()}, timeout)
        back = {
            p: max(start, end - 1 - LOOKBACK)
            for p, (start, end) in bounds.items()
            if p not in found and p not in errors and start < end - 1
        }
        if back:
            more, more_errors = latest(consumer, self.topic, back, timeout)
            found.update(more)
            errors.update(more_errors)
        return found, errors

    def _record_row(self, msg: Message) -> dict:
        """The record as `kctl consume --json` shows it (lossless), with `*_schema_id` and
        `*_decoded` for a key or value written with a registry schema."""
        record = cast(Record, msg)
        row = record_doc(record)
        if self.decoder is not None:
            for side, data in (("key", record.key()), ("value", record.value())):
                decoded = self.decoder.decode(data)
                if decoded is not None:
                    row[f"{side}_schema_id"], row[f"{side}_decoded"] = decoded
        return row

    def _consumer_made(self) -> tuple[Consumer, float]:
        """The watch's one consumer and its timeout. Connecting needs a live broker: tried
        again at every read until one answers."""
        if self._conn is None:
            self._conn = self._connect()
        if self._consumer is None:
            self._consumer = self._conn.consumer(SETTINGS)
        return self._consumer, self._conn.timeout


def _bounds(partition: dict) -> tuple[int, int | None]:
    """(log start, end): the end a read_committed consumer reaches, None while unknown."""
    end = partition.get("last_stable_offset")
    if end is None:
        end = partition.get("high_watermark")
    return partition.get("log_start_offset") or 0, end


def latest(
    consumer: Consumer, topic: str, starts: dict[int, int], timeout: float
) -> tuple[dict[int, Message], dict[int, str]]:
    """The last record of each partition read from its start offset to its end (the partition
    EOF event), and the partitions that failed with why; a partition with neither has no
    record there."""
    consumer.assign([TopicPartition(topic, p, offset) for p, offset in starts.items()])
    found: dict[int, Message] = {}
    errors: dict[int, str] = {}
    waiting = set(starts)
    deadline = time.monotonic() + timeout
    try:
        while waiting and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=500, timeout=POLL_S):
                _take(msg, topic, found, errors, waiting)
    finally:
        consumer.unassign()
    errors.update({p: f"no answer within {timeout:g}s" for p in waiting if p not in found})
    return found, errors


def _take(
    msg: Message, topic: str, found: dict[int, Message], errors: dict[int, str], waiting: set[int]
) -> None:
    """One consumed event: a record is kept (a later one replaces it), the end of a partition
    or its error finishes it; errors not about a partition are librdkafka's to retry."""
    p, error = msg.partition(), msg.error()
    if p is None or msg.topic() != topic:
        return
    if error is None:
        found[p] = msg
    elif error.code() == KafkaError._PARTITION_EOF:
        waiting.discard(p)
    else:
        errors[p] = error.str()
        waiting.discard(p)


class SamplePoller:
    """Reads the sample on a daemon thread, at most every `interval` seconds, for the latest
    snapshot `offer`ed; read `latest` any time. The consumer is used, and closed, on that
    thread only."""

    def __init__(self, source: SampleSource, interval: float):
        self.source = source
        self.interval = interval
        self.latest: Sample = {"topic": source.topic, "partitions": [], "note": "waiting for the first read"}
        self._snap: dict | None = None
        self._stop = threading.Event()
        self._started = False
        self._thread = threading.Thread(target=self._run, name="kctl-watch-sample", daemon=True)

    def offer(self, snap: dict) -> None:
        """The snapshot the next read goes by (its partitions' ends); starts the thread."""
        self._snap = snap
        if not self._started:
            self._started = True
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._snap is not None:
                    self.latest = self.source.fetch(self._snap)
                self._stop.wait(self.interval)
        finally:
            self.source.close()
