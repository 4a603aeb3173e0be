"""FindCoordinator: a group's coordinator is the leader of its __consumer_offsets partition, a
transactional id's the leader of its __transaction_state partition. Both topics are created
on first use.

As in Kafka, a group's coordinator is told only to a client that may DESCRIBE the group
(else GROUP_AUTHORIZATION_FAILED), a transactional id's only to one that may DESCRIBE the
transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import CoordinatorNotAvailableError, InvalidRequestError

from brokerd.api.authorization import require
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.coordinator.transaction_log import TRANSACTION_STATE_TOPIC
from brokerd.ports.services import BrokerServices, LiveBroker

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
RESOURCE_OF_KEY = {KEY_TYPE_GROUP: ResourceType.GROUP, KEY_TYPE_TRANSACTION: ResourceType.TRANSACTIONAL_ID}


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        resource_type = RESOURCE_OF_KEY.get(body.key_type)
        if resource_type is not None:
            require(
                services.security.authorizer, request.session, ACLOperation.DESCRIBE, resource_type, body.key
            )
        coordinator = _coordinator(services, body.key_type, body.key)
    except Exception as exc:
        return {
            "throttle_time_ms": 0,
            "error_code": error_code(exc),
            "error_message": error_message(exc),
            "node_id": -1,
            "host": "",
            "port": -1,
        }
    host, port = coordinator.endpoint(request.session.listener)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "node_id": coordinator.broker_id,
        "host": host,
        "port": port,
    }


def _coordinator(services: BrokerServices, key_type: int, key: str) -> LiveBroker:
    if key_type == KEY_TYPE_GROUP:
        topic_name, partition = OFFSETS_TOPIC, services.groups.partition_of(key)
    elif key_type == KEY_TYPE_TRANSACTION:
        if not key:
            raise InvalidRequestError("the transactional id must not be empty")
        topic_name, partition = TRANSACTION_STATE_TOPIC, services.transactions.coordinator.partition_of(key)
    else:
        raise InvalidRequestError(f"unknown coordinator key type {key_type}")
    topic = services.metadata.topics.get(topic_name) or services.metadata.auto_create_topic(topic_name)
    record = None if topic is None else topic.partitions.get(partition)
    live = {b.broker_id: b for b in services.metadata.live_brokers}
    if record is None or record.leader not in live:
        raise CoordinatorNotAvailableError(f"the coordinator of {key!r} is not available")
    return live[record.leader]
