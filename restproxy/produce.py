"""Records of a request handed to the user's shared producer, and the request waiting for its
own records' delivery reports and no one else's (v2's batches and v3's streams alike).

The producer's reports arrive on its poller's thread (restproxy.clients); each record's
report completes an asyncio future on the request's event loop, so a request waits without
holding a thread. librdkafka reports every record within its message.timeout.ms; the wait
is bounded a little beyond that all the same, so that no request can hang on a lost report.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Message

from restproxy.clients import DELIVERY_TIMEOUT_MS, PolledProducer
from restproxy.errors import RestError
from restproxy.kafkaerrors import from_exception, rest_error

DELIVERY_WAIT_S = DELIVERY_TIMEOUT_MS / 1000 + 5
QUEUE_FULL_RETRY_S = 0.005  # the producer's queue is full: wait for deliveries to make room
_PURGED = {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT, KafkaError._FATAL}


@dataclass(frozen=True)
class OutgoingRecord:
    key: bytes | None
    value: bytes | None
    partition: int | None = None  # None: the producer's partitioner chooses
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int = 0  # 0: the time it is produced


@dataclass(frozen=True)
class Delivery:
    """Where a record went (partition, offset, timestamp), or why it did not (`error`)."""

    partition: int | None
    offset: int | None
    timestamp_ms: int | None
    error: RestError | None

    @staticmethod
    def failed(error: RestError) -> Delivery:
        return Delivery(None, None, None, error)

    @staticmethod
    def reported(error: KafkaError | None, message: Message, fatal: KafkaError | None) -> Delivery:
        """A delivery report's Delivery; a record purged by a producer that failed for good
        is reported with the reason it failed."""
        if error is None:
            return Delivery(message.partition(), message.offset(), message.timestamp()[1], None)
        return Delivery.failed(rest_error(fatal if fatal is not None and error.code() in _PURGED else error))


async def send(polled: PolledProducer, topic: str, record: OutgoingRecord) -> asyncio.Future[Delivery]:
    """Hand the record to the producer; the future completes with its delivery report. A
    record the producer refuses at once (too large, unknown partition) completes it now."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Delivery] = loop.create_future()
    completions = _completions(loop)

    def delivered(error: KafkaError | None, message: Message) -> None:
        completions.add(future, Delivery.reported(error, message, polled.fatal))

    deadline = loop.time() + DELIVERY_WAIT_S
    while True:
        try:
            polled.producer.produce(
                topic,
                record.value,
                record.key,
                partition=-1 if record.partition is None else record.partition,
                on_delivery=delivered,
                timestamp=record.timestamp_ms,
                headers=list(record.headers),
            )
            return future
        except BufferError:
            if loop.time() > deadline:
                return _completed(future, Delivery.failed(_queue_full()))
            await asyncio.sleep(QUEUE_FULL_RETRY_S)
        except KafkaException as exc:  # the reason it failed for good, if it did
            failure = rest_error(polled.fatal) if polled.fatal is not None else from_exception(exc)
            return _completed(future, Delivery.failed(failure))


async def deliveries(futures: Sequence[asyncio.Future[Delivery]]) -> list[Delivery]:
    """Every record's delivery, in the order given; one without a report in time is failed."""
    if futures:
        await asyncio.wait(futures, timeout=DELIVERY_WAIT_S)
    return [future.result() if future.done() else Delivery.failed(_no_report()) for future in futures]


async def delivery(future: asyncio.Future[Delivery]) -> Delivery:
    """One record's delivery (a stream's replies take them one by one, in order)."""
    if not future.done():
        await asyncio.wait([future], timeout=DELIVERY_WAIT_S)
    return future.result() if future.done() else Delivery.failed(_no_report())


class _Completions:
    """Delivery reports handed from the poller's thread to an event loop in batches: the loop
    is woken once for the reports of one poll, not once a record, and the two threads take
    turns with the GIL that much less often."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._reports: list[tuple[asyncio.Future[Delivery], Delivery]] = []
        self._lock = threading.Lock()

    def add(self, future: asyncio.Future[Delivery], report: Delivery) -> None:
        with self._lock:
            self._reports.append((future, report))
            first = len(self._reports) == 1
        if first:
            try:
                self.loop.call_soon_threadsafe(self._complete)
            except RuntimeError:  # the loop is gone (the proxy is stopping): nobody waits
                pass

    def _complete(self) -> None:
        with self._lock:
            reports, self._reports = self._reports, []
        for future, report in reports:
            if not future.done():  # a request that went away cancelled it
                future.set_result(report)


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Completions] = weakref.WeakKeyDictionary()


def _completions(loop: asyncio.AbstractEventLoop) -> _Completions:
    if loop not in _loops:
        _loops[loop] = _Completions(loop)
    return _loops[loop]


def _completed(future: asyncio.Future[Delivery], report: Delivery) -> asyncio.Future[Delivery]:
    future.set_result(report)
    return future


def _queue_full() -> RestError:
    return RestError(500, 50003, "Local: Queue full (the proxy's producer has too many records in flight)")


def _no_report() -> RestError:
    return RestError(500, 50002, f"Local: no delivery report within {DELIVERY_WAIT_S:.0f} s")
