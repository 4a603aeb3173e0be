"""Records of a request handed to the user's shared producer, and the request waiting for its
own records' delivery reports and no one else's (v2's batches and v3's streams alike).

The producer's reports arrive on its poller's thread (restproxy.clients); each record's
report completes an asyncio future on the request's event loop, so a request waits without
holding a thread. librdkafka reports every record within its message.timeout.ms; the wait
is bounded a little beyond that all the same, so that no request can hang on a lost report.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from restproxy.clients import DELIVERY_TIMEOUT_MS
from restproxy.errors import RestError
from restproxy.kafkaerrors import from_exception, rest_error

DELIVERY_WAIT_S = DELIVERY_TIMEOUT_MS / 1000 + 5
QUEUE_FULL_RETRY_S = 0.005  # the producer's queue is full: wait for deliveries to make room


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
    def reported(error: KafkaError | None, message: Message) -> Delivery:
        if error is not None:
            return Delivery.failed(rest_error(error))
        return Delivery(message.partition(), message.offset(), message.timestamp()[1], None)


async def send(producer: Producer, topic: str, record: OutgoingRecord) -> asyncio.Future[Delivery]:
    """Hand the record to the producer; the future completes with its delivery report. A
    record the producer refuses at once (too large, unknown partition) completes it now."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Delivery] = loop.create_future()

    def delivered(error: KafkaError | None, message: Message) -> None:
        report = Delivery.reported(error, message)
        try:
            loop.call_soon_threadsafe(_complete, future, report)
        except RuntimeError:  # the request's loop is gone (the proxy is stopping): nobody waits
            pass

    deadline = loop.time() + DELIVERY_WAIT_S
    while True:
        try:
            producer.produce(
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
        except KafkaException as exc:
            return _completed(future, Delivery.failed(from_exception(exc)))


async def deliveries(futures: Sequence[asyncio.Future[Delivery]]) -> list[Delivery]:
    """Every record's delivery, in the order given; one without a report in time is failed."""
    if futures:
        await asyncio.wait(futures, timeout=DELIVERY_WAIT_S)
    return [future.result() if future.done() else Delivery.failed(_no_report()) for future in futures]


async def delivery(future: asyncio.Future[Delivery]) -> Delivery:
    return (await deliveries([future]))[0]


def _complete(future: asyncio.Future[Delivery], report: Delivery) -> None:
    if not future.done():  # a request that went away cancelled it
        future.set_result(report)


def _completed(future: asyncio.Future[Delivery], report: Delivery) -> asyncio.Future[Delivery]:
    future.set_result(report)
    return future


def _queue_full() -> RestError:
    return RestError(500, 50003, "Local: Queue full (the proxy's producer has too many records in flight)")


def _no_report() -> RestError:
    return RestError(500, 50002, f"Local: no delivery report within {DELIVERY_WAIT_S:.0f} s")
