"""The registry's storage: the compacted, single-partition `_schemas` topic.

A reader thread applies every committed record to a `RegistryState`, from the start of the
topic, so a restarted registry (or a second one against the same cluster) rebuilds the same
subjects, versions and ids. Writes go through one transactional id shared by every registry of
the cluster: a registry about to write first initialises it (fencing any other registry's
producer), then reads up to the end of the topic, then decides ids and versions and commits.
A registry that was fenced in between fails its commit and starts over, so two registries never
hand out one id twice: the epoch of the transactional id is the registry's leader election.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from schemaregistry import errors
from schemaregistry.records import Record, decode
from schemaregistry.state import RegistryState

log = logging.getLogger(__name__)

T = TypeVar("T")
WRITE_ATTEMPTS = 5


class StoreUnavailable(Exception):
    """The cluster cannot be reached or the topic is not fit to be the store."""


class KafkaStore:
    def __init__(
        self,
        bootstrap: str,
        client_config: Mapping[str, str] | None = None,
        topic: str = "_schemas",
        transactional_id: str = "schema-registry",
        timeout_s: float = 10.0,
    ) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        self._config: dict[str, str | int | float | bool] = {
            "bootstrap.servers": bootstrap,
            **(client_config or {}),
        }
        self._transactional_id = transactional_id
        self.state = RegistryState()
        self.lock = threading.RLock()  # guards state; held while a batch of records is applied
        self._applied = threading.Condition(self.lock)
        self._position = 0  # the next offset the reader will apply
        self._write_lock = threading.Lock()
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._end_offsets: Consumer | None = None  # its own connection: not queued behind a fetch
        self._end_offsets_lock = threading.Lock()
        self._stopping = threading.Event()
        self._reader: threading.Thread | None = None

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Make sure the topic exists as a store must, and read it to its end."""
        self.ensure_topic()
        self._consumer = self._reading_consumer()
        self._end_offsets = self._reading_consumer()
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        self._reader = threading.Thread(target=self._read, name="schemas-reader", daemon=True)
        self._reader.start()
        self.catch_up()

    def _reading_consumer(self) -> Consumer:
        return Consumer(
            {
                **self._config,
                "group.id": f"{self._transactional_id}-reader",  # assigned, never joined or committed
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": False,
            }
        )

    def close(self) -> None:
        self._stopping.set()
        if self._reader is not None:
            self._reader.join(timeout=self.timeout_s)
        for consumer in (self._consumer, self._end_offsets):
            if consumer is not None:
                consumer.close()
        self._drop_producer()

    def ensure_topic(self) -> None:
        """Create `_schemas` (one partition, compacted) unless it exists; refuse one that has
        more partitions or is not compacted, as Confluent's registry does."""
        admin = AdminClient(self._config)
        try:
            metadata = admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise StoreUnavailable(
                f"cannot reach the cluster at {self._config['bootstrap.servers']}: {exc}"
            ) from None
        if self.topic not in metadata.topics:
            replicas = min(3, len(metadata.brokers))
            new = NewTopic(self.topic, 1, replicas, config={"cleanup.policy": "compact"})
            try:
                admin.create_topics([new], operation_timeout=self.timeout_s)[self.topic].result(
                    self.timeout_s
                )
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise StoreUnavailable(f"cannot create the topic {self.topic}: {exc}") from None
            return
        partitions = len(metadata.topics[self.topic].partitions)
        if partitions != 1:
            raise StoreUnavailable(
                f"the schemas topic {self.topic} must have 1 partition, it has {partitions}"
            )
        resource = ConfigResource(ConfigResource.Type.TOPIC, self.topic)
        configs = admin.describe_configs([resource])[resource].result(self.timeout_s)
        policy = configs["cleanup.policy"].value
        if policy != "compact":
            raise StoreUnavailable(
                f"the schemas topic {self.topic} must have cleanup.policy=compact, it has {policy}"
            )

    # -- reading -----------------------------------------------------------------------------
    def _read(self) -> None:
        assert self._consumer is not None
        partition = TopicPartition(self.topic, 0)
        while not self._stopping.is_set():
            try:
                messages = self._consumer.consume(500, timeout=0.05)
                position = self._consumer.position([partition])[0].offset
            except KafkaException as exc:
                log.warning("reading %s: %s", self.topic, exc)
                time.sleep(0.1)
                continue
            with self._applied:
                for message in messages:
                    offset = message.offset()
                    if message.error() is None and offset is not None:
                        record = decode(message.key(), message.value())
                        if record is not None:
                            self.state.apply(record)
                        self._position = max(self._position, offset + 1)
                if position >= 0:
                    self._position = max(self._position, position)
                self._applied.notify_all()

    def catch_up(self) -> None:
        """Wait until every record committed so far is applied (what a read after a write by
        any registry must see)."""
        assert self._end_offsets is not None
        try:
            with self._end_offsets_lock:
                _, end = self._end_offsets.get_watermark_offsets(
                    TopicPartition(self.topic, 0), self.timeout_s, False
                )
        except KafkaException as exc:
            raise errors.store_timeout(f"cannot read the end of {self.topic}: {exc}") from None
        self.wait_applied(end)

    def wait_applied(self, offset: int) -> None:
        """Wait until the reader has applied everything before `offset`."""
        with self._applied:
            if not self._applied.wait_for(lambda: self._position >= offset, self.timeout_s):
                raise errors.store_timeout(f"{self.topic} was not read up to offset {offset}")

    def read(self, query: Callable[[RegistryState], T]) -> T:
        """The query's answer on a state that has every record committed so far."""
        self.catch_up()
        with self.lock:
            return query(self.state)

    # -- writing -----------------------------------------------------------------------------
    def write(self, decide: Callable[[RegistryState], tuple[list[Record], T]]) -> T:
        """Decide on the latest state and commit the records decided, as the one writer.

        `decide` runs under the state's lock on a state read up to the end of the topic after
        this registry became the writer; it raises RegistryError to refuse the request. It is
        run again if another registry took over the writing before the commit."""
        with self._write_lock:
            failure = ""
            for _ in range(WRITE_ATTEMPTS):
                producer = self._writer()
                self.catch_up()
                with self.lock:
                    records, result = decide(self.state)
                if not records:
                    return result
                try:
                    last_offset = self._commit(producer, records)
                except KafkaException as exc:
                    failure = str(exc)
                    log.info("writing to %s failed, trying again: %s", self.topic, exc)
                    self._drop_producer()
                    continue
                self.wait_applied(last_offset + 1)
                return result
            raise errors.store_error(failure)

    def _writer(self) -> Producer:
        if self._producer is None:
            producer = Producer(
                {**self._config, "transactional.id": self._transactional_id, "enable.idempotence": True}
            )
            try:
                producer.init_transactions(self.timeout_s)
            except KafkaException as exc:
                raise errors.store_timeout(f"cannot become the writer of {self.topic}: {exc}") from None
            self._producer = producer
        return self._producer

    def _drop_producer(self) -> None:
        """Forget the producer (a fenced one fails every call, flush included); its
        transaction is committed, aborted, or aborted by the coordinator on fencing."""
        self._producer = None

    def _commit(self, producer: Producer, records: list[Record]) -> int:
        """Produce the records in one transaction; the offset of the last one."""
        offsets: list[int] = []

        def delivered(err: KafkaError | None, message: object) -> None:
            if err is None:
                offsets.append(message.offset())  # type: ignore[attr-defined]

        producer.begin_transaction()
        try:
            for record in records:
                key, value = record.encode()
                producer.produce(self.topic, value=value, key=key, partition=0, on_delivery=delivered)
            producer.commit_transaction(self.timeout_s)
        except KafkaException as exc:
            if exc.args[0].txn_requires_abort():
                producer.abort_transaction(self.timeout_s)
            raise
        return max(offsets)
