"""What the routes ask the cluster, through the user's own admin client (so a secured cluster
answers with what that user may see): its metadata, a topic's configs, and the results of
admin calls awaited without holding a thread. A Kafka error becomes Confluent's answer."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import ClusterMetadata, ConfigResource, ResourceType, TopicMetadata
from starlette.concurrency import run_in_threadpool

from restproxy.clients import Credentials
from restproxy.context import ProxyContext
from restproxy.errors import RestError
from restproxy.kafkaerrors import from_exception

ADMIN_TIMEOUT_S = 10.0
T = TypeVar("T")


async def metadata(context: ProxyContext, credentials: Credentials | None) -> ClusterMetadata:
    """The cluster's brokers and topics as the user may see them (a blocking call: in a thread)."""
    admin = context.clients.admin(credentials)
    try:
        found: ClusterMetadata = await run_in_threadpool(admin.list_topics, timeout=ADMIN_TIMEOUT_S)
    except KafkaException as exc:
        raise from_exception(exc) from None
    return found


def topic_of(found: ClusterMetadata, name: str, not_found: Callable[[], RestError]) -> TopicMetadata:
    """The topic's metadata; `not_found()` when the cluster has no such topic."""
    topic: TopicMetadata | None = found.topics.get(name)
    if topic is None or (topic.error is not None and topic.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
        raise not_found()
    return topic


async def topic_configs(
    context: ProxyContext, credentials: Credentials | None, topic: str
) -> dict[str, str | None]:
    """The topic's configs, name -> value (None for a sensitive one the broker hides)."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = context.clients.admin(credentials)
    futures = admin.describe_configs([resource], request_timeout=ADMIN_TIMEOUT_S)
    entries: dict[str, Any] = await result(futures[resource])
    return {name: entry.value for name, entry in sorted(entries.items())}


async def result(future: concurrent.futures.Future[T]) -> T:
    """An admin call's outcome, awaited on the event loop; its Kafka error as Confluent's."""
    try:
        return await asyncio.wrap_future(future)
    except KafkaException as exc:
        raise from_exception(exc) from None
