"""One v2 consumer instance: a confluent-kafka Consumer in a group, owned by the instance, and
what the instance keeps beside it so that v2's calls mean what they mean in Confluent's proxy.

The instance's lock is held by whoever calls it (restproxy.consumer_instances), so its methods
never run at once: librdkafka's consumer is used from one thread at a time.

Records are taken from librdkafka in batches and handed out by `fetch` up to the request's
max_bytes; what did not fit stays in `_pending` for the next fetch (as Confluent's proxy keeps
its iterator). That is why offsets are never stored automatically (enable.auto.offset.store is
off): only records a client was given count as consumed, both for auto-commit and for a commit
without offsets, which commits the position after the last record returned on each partition."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from restproxy import errors
from restproxy.consumer_records import RecordDecoder, Undecodable
from restproxy.errors import RestError
from schemaregistry.client import RegistryUnreachable

BATCH = 500  # messages taken from librdkafka at once
POLL_SLICE_S = 0.2  # the longest one poll blocks, so a fetch notices max_bytes being reached
PartitionKey = tuple[str, int]
Offset = tuple[str, int, int]  # topic, partition, offset (or a librdkafka logical offset)
IGNORED_ERRORS = (  # reported by librdkafka as messages, none of them a reason to fail a fetch
    KafkaError._PARTITION_EOF,
    KafkaError.UNKNOWN_TOPIC_OR_PART,  # a subscribed topic that does not exist (yet)
)


class ConsumerInstance:
    def __init__(
        self,
        group: str,
        name: str,
        kafka_config: dict[str, Any],
        decoder: RecordDecoder,
        owner: str | None,
        request_timeout_s: float,
        fetch_min_bytes: int,
    ) -> None:
        self.group = group
        self.name = name
        self.decoder = decoder
        self.owner = owner  # the user who made it, on a secured cluster; only they may use it
        self.request_timeout_s = request_timeout_s
        self.fetch_min_bytes = fetch_min_bytes  # < 0: a fetch waits its whole timeout
        self.lock = threading.Lock()
        self.closed = False
        self.last_used = time.monotonic()
        self._consumer = Consumer(kafka_config)
        self._auto_commit = kafka_config.get("enable.auto.commit", True)
        self._mode: str | None = None  # "subscribed" or "assigned", exclusive as in Kafka's consumer
        self._topics: list[str] = []
        self._pattern: str | None = None
        self._pending: deque[Message] = deque()
        self._returned: dict[PartitionKey, int] = {}  # the offset after the last record given out

    @property
    def format(self) -> str:
        return self.decoder.format

    def touch(self) -> None:
        """Used now: its idle time (towards consumer.instance.timeout.ms) starts again."""
        self.last_used = time.monotonic()

    # --- subscription and assignment

    def subscribe(self, topics: list[str], pattern: str | None) -> None:
        if self._mode == "assigned":
            raise errors.illegal_state(
                "Subscription to topics, partitions and pattern are mutually exclusive"
            )
        if not topics and pattern is None:
            self.unsubscribe()
            return
        topics = list(dict.fromkeys(topics))  # librdkafka refuses a topic named twice
        target = [pattern if pattern.startswith("^") else f"^{pattern}"] if pattern is not None else topics
        try:
            self._consumer.subscribe(target, on_revoke=self._revoked)
        except KafkaException as error:
            if pattern is not None and error.args[0].code() == KafkaError._INVALID_ARG:
                raise RestError(422, 422, f"Invalid topic_pattern: {pattern}") from None  # not a regex
            raise
        self._mode, self._topics, self._pattern = "subscribed", topics, pattern

    def unsubscribe(self) -> None:
        if self._mode == "subscribed":
            self._consumer.unsubscribe()
        elif self._mode == "assigned":
            self._consumer.unassign()
        self._mode, self._topics, self._pattern = None, [], None
        self._forget(None)

    def subscription(self) -> list[str]:
        """The topics subscribed to; for a pattern, those it has given this instance partitions of."""
        if self._pattern is not None:
            return sorted({topic for topic, _ in self.assignment()})
        return list(self._topics)

    def assign(self, partitions: list[PartitionKey]) -> None:
        if self._mode == "subscribed":
            raise errors.illegal_state(
                "Subscription to topics, partitions and pattern are mutually exclusive"
            )
        if not partitions:
            self.unsubscribe()
            return
        unique = dict.fromkeys(partitions)  # librdkafka refuses a partition named twice, here and below
        self._consumer.assign([TopicPartition(topic, partition) for topic, partition in unique])
        self._mode = "assigned"
        self._forget(None)

    def assignment(self) -> list[PartitionKey]:
        return [(tp.topic, tp.partition) for tp in self._consumer.assignment()]

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """A rebalance took partitions away: their fetched records are another member's now."""
        self._forget({(tp.topic, tp.partition) for tp in partitions})

    def _forget(self, partitions: set[PartitionKey] | None) -> None:
        """Drop what was fetched (and not committed) from these partitions, or from all."""
        if partitions is None:
            self._pending.clear()
            self._returned.clear()
            return
        self._pending = deque(m for m in self._pending if (m.topic(), m.partition()) not in partitions)
        for key in partitions:
            self._returned.pop(key, None)

    # --- positions

    def seek(self, offsets: list[Offset]) -> None:
        """Fetch from these offsets next (librdkafka's logical ones for beginning and end)."""
        chosen = {(topic, partition): offset for topic, partition, offset in offsets}  # the last one
        assigned = set(self.assignment())
        for topic, partition in chosen:
            if (topic, partition) not in assigned:
                raise errors.illegal_state(f"No current assignment for partition {topic}-{partition}")
        self._forget(set(chosen))
        targets = [TopicPartition(topic, partition, offset) for (topic, partition), offset in chosen.items()]
        if self._mode == "assigned":  # librdkafka refuses a seek before a partition's fetch starts
            self._consumer.incremental_unassign([TopicPartition(tp.topic, tp.partition) for tp in targets])
            self._consumer.incremental_assign(targets)
            return
        for target in targets:
            self._consumer.seek(target)

    # --- records

    def fetch(self, timeout_s: float, max_bytes: int) -> list[dict[str, Any]]:
        """Records until max_bytes, fetch.min.bytes or the timeout; at least one if any is there
        (so a record larger than max_bytes is not stuck forever, as it would be in Confluent's)."""
        if self._mode is None:
            raise errors.illegal_state("Consumer is not subscribed to any topics or assigned any partitions")
        deadline = time.monotonic() + timeout_s
        records: list[dict[str, Any]] = []
        size = 0
        while True:
            size, full = self._take(records, size, max_bytes)
            remaining = deadline - time.monotonic()
            if full or remaining <= 0 or 0 <= self.fetch_min_bytes < size:
                break
            self._poll(min(remaining, POLL_SLICE_S))
        self._consumed(records)
        return records

    def _take(self, records: list[dict[str, Any]], size: int, max_bytes: int) -> tuple[int, bool]:
        """Move pending messages into `records` while they fit: (the size now, whether full)."""
        while self._pending:
            try:
                record, record_size = self.decoder.record(self._pending[0])
            except (Undecodable, RegistryUnreachable):
                if records:  # give what decoded; the next fetch starts with this one and fails
                    return size, True
                raise
            if records and size + record_size > max_bytes:
                return size, True
            self._pending.popleft()
            records.append(record)
            size += record_size
        return size, size >= max_bytes

    def _poll(self, timeout_s: float) -> None:
        for message in self._consumer.consume(BATCH, timeout_s):
            error = message.error()
            if error is None:
                self._pending.append(message)
            elif error.code() not in IGNORED_ERRORS:
                raise KafkaException(error)

    def _consumed(self, records: Iterable[dict[str, Any]]) -> None:
        """Count the records given out as consumed (auto-commit commits them), but for
        partitions a rebalance during the fetch gave another member: theirs to commit now."""
        assigned = set(self.assignment())
        given: dict[PartitionKey, int] = {}
        for record in records:
            if (record["topic"], record["partition"]) in assigned:
                given[record["topic"], record["partition"]] = record["offset"] + 1
        self._returned.update(given)
        if self._auto_commit and given:
            self._consumer.store_offsets(offsets=[TopicPartition(t, p, o) for (t, p), o in given.items()])

    # --- offsets

    def commit(self, offsets: list[tuple[str, int, int, str | None]] | None, asynchronous: bool) -> None:
        """Commit offset+1 of each given record (Confluent's v2 does); without offsets, the
        position after every record returned so far."""
        if offsets is None:
            targets = [TopicPartition(t, p, o) for (t, p), o in self._returned.items()]
        else:
            chosen = {(t, p): (o, metadata) for t, p, o, metadata in offsets}  # the last one of each
            targets = [
                TopicPartition(t, p, o + 1) if metadata is None else TopicPartition(t, p, o + 1, metadata)
                for (t, p), (o, metadata) in chosen.items()
            ]
        if not targets:
            return
        if asynchronous:  # its outcome is librdkafka's log's, as Confluent's async commit's is
            self._consumer.commit(offsets=targets, asynchronous=True)
            return
        for tp in self._consumer.commit(offsets=targets, asynchronous=False):
            if tp.error is not None:
                raise KafkaException(tp.error)

    def committed(self, partitions: list[PartitionKey], timeout_s: float) -> list[dict[str, Any]]:
        """The group's committed offsets of these partitions (those with none left out)."""
        unique = dict.fromkeys(partitions)
        found = self._consumer.committed([TopicPartition(t, p) for t, p in unique], timeout=timeout_s)
        return [
            {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset, "metadata": tp.metadata or ""}
            for tp in found
            if tp.error is None and tp.offset >= 0
        ]

    def close(self) -> None:
        """Leave the group now (not after the session timeout), committing stored offsets if
        auto-commit is on; the caller holds the lock, and no call comes after."""
        self.closed = True
        self._pending.clear()
        self._consumer.close()
