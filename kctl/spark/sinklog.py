"""The streaming sink's own log: which micro-batches it committed and which tasks started.

One single-partition topic per streaming query, `__kctl_spark_sink-<query id>`, on the
cluster the sink writes to (Spark's query id survives restarts from a checkpoint). Two kinds
of records, appended with acks=all:

* intent {batch, task}: written by a write task before it produces anything;
* commit {batch, ends}: written by the driver once every task of the batch delivered, with
  the end offsets of every partition the query writes to at that moment.

So after the latest commit the log holds the intents of the batch in flight; a task that
finds its own intent there knows an earlier attempt may have produced records, and that
they can only be at or after the commit's end offsets (see kctl.spark.replay).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kctl.kafka.record import Record
from kctl.spark.fetch import read_range
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.offsets import Offsets, TopicPartition, from_json, to_json
from kctl.spark.planning import OffsetRange
from kctl.spark.produce import Outbox

PREFIX = "__kctl_spark_sink-"
CHUNK = 256  # records read per step when walking back from the end
READY_TIMEOUT_S = 30.0
INTENT, COMMIT = b"intent", b"commit"


@dataclass(frozen=True)
class Commit:
    batch: int
    ends: Offsets


@dataclass(frozen=True)
class Tail:
    """The latest commit (None before the first) and the (batch, task) intents after it."""

    commit: Commit | None
    intents: list[tuple[int, int]] = field(default_factory=list)

    @property
    def committed(self) -> int:
        return -1 if self.commit is None else self.commit.batch


def log_topic(query_id: str) -> str:
    return PREFIX + query_id


class SinkLog:
    def __init__(self, client: dict[str, str], query_id: str):
        self._client = client
        # A metadata request for a missing topic must not create it with broker defaults.
        self._admin = AdminClient(
            {
                **{k: v for k, v in self._client.items() if k not in ("group.id", "isolation.level")},
                "allow.auto.create.topics": False,
            }
        )
        self._cluster = ClusterOffsets(self._client)
        self.topic = log_topic(query_id)
        self._tp = TopicPartition(self.topic, 0)

    def tail(self) -> Tail:
        """Walk back from the end to the latest commit, collecting the intents after it."""
        if not self._exists():
            return Tail(None)
        low, stop = self._bounds()
        intents: list[tuple[int, int]] = []
        while stop > low:
            start = max(low, stop - CHUNK)
            commit, later = _last_commit(self._read(start, stop))
            intents = later + intents
            if commit is not None:
                return Tail(commit, intents)
            stop = start
        return Tail(None, intents)

    def record_intent(self, batch: int, task: int) -> None:
        self._append(INTENT, {"batch": batch, "task": task})

    def record_commit(self, batch: int, ends: Offsets) -> None:
        self._append(COMMIT, {"batch": batch, "ends": to_json(ends)})

    def _append(self, kind: bytes, doc: dict) -> None:
        if not self._exists():
            self._create()
        # Not idempotent: a duplicate from a client retry changes nothing here, and an
        # idempotent producer's start-up would cost every task half a second.
        with Outbox(self._client, idempotent=False) as outbox:
            outbox.send(self.topic, 0, kind, json.dumps(doc).encode(), [])

    def _read(self, start: int, stop: int) -> list[tuple[bytes, dict]]:
        chunks = read_range(
            self._client,
            OffsetRange(self.topic, 0, start, stop),
            fail_on_data_loss=True,
            timeout_s=READY_TIMEOUT_S,
        )
        return [_entry(m) for chunk in chunks for m in chunk]

    def _exists(self) -> bool:
        meta = self._admin.list_topics(self.topic, timeout=READY_TIMEOUT_S).topics.get(self.topic)
        return meta is not None and meta.error is None and 0 in meta.partitions

    def _create(self) -> None:
        """Create the log topic (another task may be doing the same) and wait for its leader."""
        future = self._admin.create_topics([NewTopic(self.topic, 1, -1)])[self.topic]
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        self._bounds()

    def _bounds(self) -> tuple[int, int]:
        """Log start and end offsets, once the partition's leader answers: a topic another
        task has just created is in the metadata a moment before its leader serves it."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                return (
                    self._cluster.earliest([self._tp])[self._tp],
                    self._cluster.latest([self._tp])[self._tp],
                )
            except ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def _entry(record: Record) -> tuple[bytes, dict]:
    """A record of the log: its kind and its document."""
    kind, doc = record.key(), record.value()
    assert kind is not None and doc is not None  # _append writes both
    return kind, json.loads(doc)


def _last_commit(records: list[tuple[bytes, dict]]) -> tuple[Commit | None, list[tuple[int, int]]]:
    """The last commit among records, and the intents that follow it."""
    intents: list[tuple[int, int]] = []
    for kind, doc in reversed(records):
        if kind == COMMIT:
            return Commit(doc["batch"], from_json(doc["ends"])), intents
        intents.insert(0, (doc["batch"], doc["task"]))
    return None, intents
