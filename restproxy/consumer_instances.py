"""The proxy's v2 consumer instances, by group and name: made, used one request at a time,
deleted, and destroyed when idle for consumer.instance.timeout.ms, as Confluent's proxy does.

Bounds, so that no client can make the proxy hold unbounded resources (each instance is a
librdkafka consumer with its own threads, sockets and fetch buffers):
* at most `max_instances` instances (1,000 by default); one more is refused with HTTP 429 and
  error code 42901 until some are deleted or expire (Confluent's proxy sets no such bound);
* librdkafka buffers at most QUEUED_KBYTES per instance;
* a request waits at most LOCK_WAIT_S for another request on the same instance to finish.

Errors beside Confluent's: a record that does not decode in the instance's format is 422 and
42206 (Confluent's proxy fails the whole read); an unreachable schema registry is 503
and 50301.

Expiry: a reaper thread closes every instance not used for the timeout. Closing the consumer
sends LeaveGroup, so its partitions go to the group's other members at once, not after the
session timeout; any later call to the instance is 40403."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import KafkaError, KafkaException

from restproxy import errors, kafkaerrors
from restproxy.clients import Clients, Credentials
from restproxy.consumer_config import (
    MAX_REQUEST_TIMEOUT_MS,
    InstanceConfig,
    kafka_config,
    request_timeout_s,
)
from restproxy.consumer_instance import ConsumerInstance
from restproxy.consumer_records import RecordDecoder, Undecodable
from restproxy.context import Settings
from restproxy.errors import RestError
from schemaregistry.client import RegistryClient, RegistryUnreachable

log = logging.getLogger("restproxy.consumers")

MAX_INSTANCES = 1_000
LOCK_WAIT_S = MAX_REQUEST_TIMEOUT_MS / 1000 + 10  # longer than any one request holds an instance
Key = tuple[str, str]  # group, instance name


class ConsumerInstances:
    """Every instance of the proxy, and the reaper thread that expires them."""

    def __init__(
        self,
        clients: Clients,
        registry: RegistryClient | None,
        settings: Settings,
        max_instances: int = MAX_INSTANCES,
    ) -> None:
        self._clients = clients
        self._registry = registry
        self._settings = settings
        self._max_instances = max_instances
        self._idle_s = settings.consumer_instance_timeout_ms / 1000
        self._instances: dict[Key, ConsumerInstance | None] = {}  # None: a name reserved while made
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="consumer-instance-reaper", daemon=True)
        self._reaper.start()

    # --- the instances' lives

    def create(self, group: str, config: InstanceConfig, credentials: Credentials | None) -> str:
        """A new instance's name: the one asked for (40902 if the group has it) or a new one."""
        name = config.name or f"rest-consumer-{uuid.uuid4()}"
        key = (group, name)
        with self._lock:
            if key in self._instances:
                raise errors.consumer_already_exists(name)
            if len(self._instances) >= self._max_instances:
                raise RestError(
                    429,
                    42901,
                    f"Too many consumer instances: this proxy holds at most {self._max_instances}; "
                    "delete instances no longer used (DELETE .../instances/{name}) or let them expire.",
                )
            self._instances[key] = None
        try:
            instance = self._make(group, name, config, credentials)
        except BaseException:
            with self._lock:
                del self._instances[key]
            raise
        with self._lock:
            self._instances[key] = instance
        return name

    def _make(
        self, group: str, name: str, config: InstanceConfig, credentials: Credentials | None
    ) -> ConsumerInstance:
        try:
            decoder = RecordDecoder(config.format, self._registry)
        except ValueError as error:
            raise errors.invalid_consumer_config(f"{error} (the proxy has none)") from None
        kafka = kafka_config(self._clients.config(credentials), group, name, config, self._settings)
        try:
            return ConsumerInstance(
                group,
                name,
                kafka,
                decoder,
                None if credentials is None else credentials[0],
                request_timeout_s(config, self._settings),
                config.fetch_min_bytes,
            )
        except KafkaException as error:
            raise errors.invalid_consumer_config(error.args[0].str()) from None

    @contextmanager
    def use(self, group: str, name: str, credentials: Credentials | None) -> Iterator[ConsumerInstance]:
        """The instance, alone (other requests on it wait), its idle time reset; 40403 if there
        is none (or it is another user's); Kafka's and decoding errors as Confluent's."""
        with self._lock:
            instance = self._instances.get((group, name))
        if instance is None or instance.owner != (None if credentials is None else credentials[0]):
            raise errors.consumer_instance_not_found()
        if not instance.lock.acquire(timeout=LOCK_WAIT_S):
            raise errors.illegal_state("another request on this consumer instance is still running")
        try:
            if instance.closed:
                raise errors.consumer_instance_not_found()
            instance.touch()
            try:
                yield instance
            except KafkaException as error:
                raise kafka_failure(error.args[0]) from None
            except Undecodable as error:
                raise errors.invalid_payload(f"{error}; seek past it with .../positions") from None
            except RegistryUnreachable as error:
                raise RestError(503, 50301, f"Schema registry unavailable: {error}") from None
            finally:
                instance.touch()
        finally:
            instance.lock.release()

    def delete(self, group: str, name: str, credentials: Credentials | None) -> None:
        with self.use(group, name, credentials) as instance:
            with self._lock:
                self._instances.pop((group, name), None)
            self._close(instance)

    def close(self) -> None:
        """At the proxy's shutdown: stop the reaper, close every instance (each leaves its group)."""
        self._stopped.set()
        self._reaper.join()
        with self._lock:
            instances = [i for i in self._instances.values() if i is not None]
            self._instances.clear()
        for instance in instances:
            if instance.lock.acquire(timeout=LOCK_WAIT_S):
                try:
                    self._close(instance)
                finally:
                    instance.lock.release()

    # --- expiry

    def _reap(self) -> None:
        interval = min(1.0, max(0.05, self._idle_s / 5))
        while not self._stopped.wait(interval):
            for key, instance in self._idle():
                if instance.lock.acquire(blocking=False):  # one in use is not idle
                    try:
                        self._expire(key, instance)
                    except Exception:  # the reaper must outlive any one instance's failure
                        log.exception("expiring consumer instance %s", instance.name)
                    finally:
                        instance.lock.release()

    def _idle(self) -> list[tuple[Key, ConsumerInstance]]:
        now = time.monotonic()
        with self._lock:
            return [
                (key, i)
                for key, i in self._instances.items()
                if i is not None and now - i.last_used >= self._idle_s
            ]

    def _expire(self, key: Key, instance: ConsumerInstance) -> None:
        if instance.closed or time.monotonic() - instance.last_used < self._idle_s:
            return
        with self._lock:
            self._instances.pop(key, None)
        log.info("consumer instance %s of group %s expired", instance.name, instance.group)
        self._close(instance)

    @staticmethod
    def _close(instance: ConsumerInstance) -> None:
        try:
            instance.close()
        except KafkaException as error:  # it is gone from the proxy all the same
            log.warning("closing consumer instance %s: %s", instance.name, error)


def kafka_failure(error: KafkaError) -> RestError:
    """A Kafka error as Confluent's proxy answers it; a consumer's own state errors (a partition
    it is not assigned, no offset to reset to with auto.offset.reset=none) are 40903, as the
    IllegalStateException Kafka's consumer throws for them is."""
    if error.code() in (KafkaError._STATE, KafkaError._AUTO_OFFSET_RESET, KafkaError._NO_OFFSET):
        return errors.illegal_state(error.str())
    return kafkaerrors.rest_error(error)
