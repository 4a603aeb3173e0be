"""The sink: batch writes (at least once) and streaming writes (exactly once per micro-batch).

A streaming write task first reads the query's sink log (kctl.spark.sinklog):

* its batch is already committed (Spark replays the last batch when it stopped between our
  commit and its own): it produces nothing;
* otherwise it records its intent, and if an intent of the same task was already there, an
  earlier attempt may have delivered part of the rows: those are skipped (kctl.spark.replay);
* once every task delivered, the driver's commit records the batch in the sink log.

With key.format or value.format, each batch's encoded sides are encoded first
(kctl.spark.encoding): what the replay compares is the records as they are produced.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from kctl.spark.encoding import SinkEncoding, encoded
from kctl.spark.lookup import ClusterOffsets
from kctl.spark.options import SinkOptions, Subscription
from kctl.spark.produce import Outbox, SinkColumns, rows
from kctl.spark.replay import TAG, Leftovers, TaskIdentity, current_task
from kctl.spark.sinklog import SinkLog


@dataclass
class Delivered(WriterCommitMessage):
    """What one task wrote: travels from the executor to the driver's commit."""

    query: str | None = None
    topics: list[str] = field(default_factory=list)
    records: int = 0


class KctlBatchWriter(DataSourceArrowWriter):
    """At least once, like Spark's Kafka sink: a failed job may leave part of its rows behind."""

    def __init__(self, options: SinkOptions, columns: SinkColumns, encoding: SinkEncoding | None = None):
        self._options = options
        self._columns = columns
        self._encoding = encoding

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Delivered:
        topics = set()
        with Outbox(self._options.client) as outbox:
            for batch in encoded(iterator, self._encoding):
                for row in rows(batch, self._columns):
                    topics.add(row[0])
                    outbox.send(*row)
        return Delivered(None, sorted(topics), outbox.delivered)


class KctlStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, columns: SinkColumns, encoding: SinkEncoding | None = None):
        self._options = options
        self._columns = columns
        self._encoding = encoding

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Delivered:
        return self.write_task(current_task(), iterator)

    def write_task(self, identity: TaskIdentity, iterator: Iterator[pa.RecordBatch]) -> Delivered:
        """The rows of one task of one micro-batch, each delivered once over all its attempts."""
        log = SinkLog(self._options.client, identity.query)
        tail = log.tail()
        if identity.batch <= tail.committed:
            for _ in iterator:  # still consume the input: upstream operators finish on exhaustion
                pass
            return Delivered(identity.query)
        replayed = (identity.batch, identity.task) in tail.intents
        log.record_intent(identity.batch, identity.task)
        leftovers = (
            Leftovers(self._options.client, identity, tail.commit.ends if tail.commit else {})
            if replayed
            else None
        )
        return self._produce(iterator, identity, leftovers)

    def _produce(
        self, iterator: Iterator[pa.RecordBatch], identity: TaskIdentity, leftovers: Leftovers | None
    ) -> Delivered:
        topics = set()
        tags = {chose: (TAG, identity.tag(chose)) for chose in (False, True)}
        with Outbox(self._options.client) as outbox:
            for batch in encoded(iterator, self._encoding):
                for row in rows(batch, self._columns):
                    topics.add(row[0])
                    if leftovers is not None and leftovers.take(row):
                        continue
                    topic, partition, key, value, headers = row
                    outbox.send(topic, partition, key, value, headers + [tags[partition is not None]])
        return Delivered(identity.query, sorted(topics), outbox.delivered)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Record the batch, with the end offsets of every partition the query writes to."""
        done = [m for m in messages if isinstance(m, Delivered) and m.query]
        query = done[0].query if done else None
        if not query:
            return  # no task ran, nothing was written
        log = SinkLog(self._options.client, query)
        tail = log.tail()
        if tail.committed >= batchId:
            return
        known = tail.commit.ends if tail.commit else {}
        topics = {t for m in done for t in m.topics} | {tp.topic for tp in known}
        if self._options.topic:
            topics.add(self._options.topic)
        cluster = ClusterOffsets(self._options.client)
        ends = cluster.latest(cluster.partitions(Subscription(topics=tuple(sorted(topics)))))
        log.record_commit(batchId, ends)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: delivered rows stay, and the batch's next attempt skips them."""
