"""Metadata: brokers, controller, and per partition the leader, replicas and ISR; and
DescribeCluster, the admin clients' view of the first two.

As in Kafka, a client sees only the topics it may DESCRIBE: a listing of every topic leaves
the others out, a topic asked for by name answers TOPIC_AUTHORIZATION_FAILED whether it exists
or not, and auto-creation needs CREATE on the cluster or on the topic (else
TOPIC_AUTHORIZATION_FAILED). Brokers, controller and DescribeCluster are answered to anyone;
the cluster's authorized operations only to a client that may DESCRIBE it.

From v10 every topic carries its topic id, so a client notices a topic that was deleted
and created again under the same name (its partition count and leader epochs start over).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import (
    KafkaError,
    LeaderNotAvailableError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    UnsupportedEndpointTypeError,
)
from kafka.protocol.api_key import ApiKey
from kafka.protocol.data_container import DataContainer

from brokerd.api.authorization import Permission, allows_cluster, decided
from brokerd.api.authorized_operations import authorized_operations, cluster_operations
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.coordinator import INTERNAL_TOPICS
from brokerd.metadata.image import MetadataDelta, TopicImage
from brokerd.metadata.registration import PartitionRegistration
from brokerd.ports.services import BrokerServices, LiveBroker
from brokerd.protocol.codec import response_element
from brokerd.security.principal import Session
from brokerd.security.standard_authorizer import StandardAuthorizer
from brokerd.storage.topic_name import validate_topic_name

ZERO_TOPIC_ID = uuid.UUID(int=0)
BROKER_ENDPOINTS = 1


class TopicMetadataCache:
    """Each topic's part of a Metadata response, built once and reused until the metadata
    changes that topic or the set of live brokers changes (Kafka's brokers answer from their
    MetadataCache the same way): a client listing 10,000 partitions does not make the broker
    describe and build 10,000 partitions again when nothing moved."""

    def __init__(self) -> None:
        self._topics: dict[str, DataContainer] = {}
        self._live: frozenset[int] = frozenset()

    def forget(self, delta: MetadataDelta) -> None:
        """Drop what the metadata records just applied changed."""
        if delta.full:
            self._topics.clear()
            return
        for name in delta.created_topics | delta.removed_topics | {t for t, _ in delta.partitions}:
            self._topics.pop(name, None)

    def topic(self, topics: Mapping[str, TopicImage], name: str, live: frozenset[int]) -> DataContainer:
        """The topic's response element (its authorized operations not asked for)."""
        if live != self._live:
            self._topics.clear()
            self._live = live
        element = self._topics.get(name)
        if element is None:
            topic = _describe_topic(topics, None, name, live)
            topic["authorized_operations"] = None
            element = self._topics[name] = response_element(ApiKey.Metadata, "topics", topic)
        return element


async def handle(services: BrokerServices, request: Request, cache: TopicMetadataCache) -> dict:
    body = request.body
    version = request.header.api_version
    services.metadata.refresh_registrations()  # a broker started a moment ago is listed at once
    # and a topic created or moved a moment ago is answered as it is now
    services.metadata.apply_metadata_delta()
    all_topics = body.topics is None or (version == 0 and not body.topics)
    allow_create = (
        services.config.get("auto.create.topics.enable")
        and (version < 4 or body.allow_auto_topic_creation)
        and not all_topics
    )
    # Listing every topic leaves out, silently, those the client may not DESCRIBE.
    describable = Permission(
        services.security.authorizer, request.session, ACLOperation.DESCRIBE, audit=not all_topics
    )
    creatable = _creatable(services.security.authorizer, request.session) if allow_create else None
    asks_topic_ops = getattr(body, "include_topic_authorized_operations", False)
    live = frozenset(b.broker_id for b in services.metadata.live_brokers)
    topics: list[dict | DataContainer] = []
    for name, by_id in _requested_names(body, all_topics, services.metadata.topics):
        if isinstance(name, uuid.UUID):
            topics.append(_topic_error(None, UnknownTopicIdError(f"no topic has id {name}"), name))
        elif not describable.allows(name):
            if not all_topics:  # the topic's existence is not disclosed, its id only if asked by it
                topics.append(
                    _topic_error(
                        None if by_id else name,
                        describable.denial(),
                        _topic_id(services.metadata.topics, name) if by_id else ZERO_TOPIC_ID,
                    )
                )
        elif creatable is not None and name not in services.metadata.topics and not creatable.allows(name):
            topics.append(_topic_error(name, creatable.denial()))
        elif name in services.metadata.topics and not asks_topic_ops:
            topics.append(cache.topic(services.metadata.topics, name, live))
        else:
            topic = _describe_topic(
                services.metadata.topics,
                services.metadata.auto_create_topic if allow_create else None,
                name,
                live,
            )
            topic["authorized_operations"] = authorized_operations(
                services.security.authorizer, request.session, asks_topic_ops, ResourceType.TOPIC, name
            )
            topics.append(topic)
    return {
        "throttle_time_ms": 0,
        "brokers": [_endpoint(b, request, "node_id") for b in services.metadata.live_brokers],
        "cluster_id": services.cluster_id,
        "controller_id": services.metadata.live_controller_id(),
        "topics": topics,
        "authorized_operations": cluster_operations(
            services.security.authorizer,
            request.session,
            getattr(body, "include_cluster_authorized_operations", False),
        ),
    }


def _creatable(authorizer: StandardAuthorizer, session: Session) -> Permission:
    """Auto-creation needs CREATE on the cluster or else on the topic (Kafka's order)."""
    if allows_cluster(authorizer, session, ACLOperation.CREATE, audit=False):
        return decided(True)
    return Permission(authorizer, session, ACLOperation.CREATE)


def _topic_id(topics: Mapping[str, TopicImage], name: str) -> uuid.UUID:
    return uuid.UUID(hex=topics[name].topic_id)


async def handle_describe_cluster(services: BrokerServices, request: Request) -> dict:
    """The live brokers (endpoint type 1); there are no separate KRaft controller endpoints."""
    if getattr(request.body, "endpoint_type", BROKER_ENDPOINTS) != BROKER_ENDPOINTS:
        exc = UnsupportedEndpointTypeError("brokerd has broker endpoints only")
        return {
            "throttle_time_ms": 0,
            "error_code": error_code(exc),
            "error_message": error_message(exc),
            "endpoint_type": request.body.endpoint_type,
            "cluster_id": services.cluster_id,
            "controller_id": -1,
            "brokers": [],
        }
    services.metadata.refresh_registrations()
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINTS,
        "cluster_id": services.cluster_id,
        "controller_id": services.metadata.live_controller_id(),
        "brokers": [_endpoint(b, request, "broker_id") for b in services.metadata.live_brokers],
        "authorized_operations": cluster_operations(
            services.security.authorizer, request.session, request.body.include_cluster_authorized_operations
        ),
    }


def _endpoint(registration: LiveBroker, request: Request, id_field: str) -> dict:
    """A broker as the client should reach it: on the listener the request came in on."""
    host, port = registration.endpoint(request.session.listener)
    return {id_field: registration.broker_id, "host": host, "port": port, "rack": None}


def _requested_names(
    body, all_topics: bool, topics: Mapping[str, TopicImage]
) -> list[tuple[str | uuid.UUID, bool]]:
    """Each topic asked about and whether it was asked by id. v0 asks for every topic with an
    empty list, v1+ with a null list; from v10 a topic may be named by its id instead (an
    unknown id stays a UUID and gets UNKNOWN_TOPIC_ID)."""
    if all_topics:
        return [(name, False) for name in sorted(topics)]
    by_id = {uuid.UUID(hex=t.topic_id): name for name, t in topics.items()}
    return [
        (t.name, False) if t.name is not None else (by_id.get(t.topic_id, t.topic_id), True)
        for t in body.topics
    ]


def _describe_topic(
    topics: Mapping[str, TopicImage],
    create: Callable[[str], TopicImage | None] | None,
    name: str,
    live: frozenset[int],
) -> dict:
    """The topic's part of the response; an unknown one is auto-created with ``create`` when
    the request may create it (None otherwise)."""
    topic = topics.get(name)
    if topic is None:
        try:
            topic = _auto_create(create, name) if create is not None else None
        except KafkaError as exc:
            return _topic_error(name, exc)
        if topic is None:
            return _topic_error(name, UnknownTopicOrPartitionError())
    return {
        "error_code": 0,
        "name": name,
        "topic_id": uuid.UUID(hex=topic.topic_id),
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [_describe_partition(p, live) for p in topic.partitions.values()],
    }


def _describe_partition(record: PartitionRegistration, live: frozenset[int]) -> dict:
    leader_alive = record.leader in live
    return {
        "error_code": 0 if leader_alive else LeaderNotAvailableError.errno,
        "partition_index": record.partition,
        "leader_id": record.leader if leader_alive else -1,
        "leader_epoch": record.leader_epoch,
        "replica_nodes": record.replicas,
        "isr_nodes": record.isr,
        "offline_replicas": [r for r in record.replicas if r not in live],
    }


def _auto_create(create: Callable[[str], TopicImage | None], name: str) -> TopicImage:
    validate_topic_name(name)
    topic = create(name)
    if topic is None:
        raise LeaderNotAvailableError(f"topic {name} is being created")
    return topic


def _topic_error(name: str | None, exc: Exception, topic_id: uuid.UUID = ZERO_TOPIC_ID) -> dict:
    return {
        "error_code": error_code(exc),
        "name": name,
        "topic_id": topic_id,
        "is_internal": False,
        "partitions": [],
        "authorized_operations": None,
    }
