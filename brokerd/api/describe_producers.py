"""DescribeProducers (KIP-664): the producer state a replica keeps for each partition.

Admin tools use it to find hanging transactions: each producer's epoch, last sequence and
timestamp, the coordinator epoch of its last marker and the first offset of its open
transaction (-1 when none). As in Kafka any replica answers from its own log, whose producer
state is rebuilt from the same batch headers as the leader's; clients ask the leader unless
told otherwise. A partition this broker does not host is NOT_LEADER_OR_FOLLOWER, one that
does not exist UNKNOWN_TOPIC_OR_PARTITION; one of a topic the client may not READ
TOPIC_AUTHORIZATION_FAILED, as in Kafka.
"""

from __future__ import annotations

from kafka.admin import ACLOperation
from kafka.errors import NotLeaderForPartitionError, UnknownTopicOrPartitionError

from brokerd.api.authorization import Permission
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.partition import Partition
from brokerd.ports.services import BrokerServices

NO_TXN = -1


async def handle(services: BrokerServices, request: Request) -> dict:
    services.metadata.apply_metadata_delta()  # a topic created a moment ago is known here at once
    readable = Permission(services.security.authorizer, request.session, ACLOperation.READ)
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": topic.name,
                "partitions": [
                    _describe(services, topic.name, index, readable) for index in topic.partition_indexes
                ],
            }
            for topic in request.body.topics
        ],
    }


def _describe(services: BrokerServices, topic: str, index: int, readable: Permission) -> dict:
    try:
        readable.require(topic)
        partition = _hosted(services, topic, index)
    except Exception as exc:
        return {
            "partition_index": index,
            "error_code": error_code(exc),
            "error_message": error_message(exc),
            "active_producers": [],
        }
    return {
        "partition_index": index,
        "error_code": 0,
        "error_message": None,
        "active_producers": [_producer_state(entry) for entry in partition.log.active_producers()],
    }


def _hosted(services: BrokerServices, topic: str, index: int) -> Partition:
    """The local replica, or Kafka's error: a partition that exists elsewhere tells the client
    to refresh its metadata, one that does not exist is unknown."""
    partition = services.replicas.partitions.get((topic, index))
    if partition is not None:
        return partition
    record = services.metadata.topics.get(topic)
    if record is not None and index in record.partitions:
        raise NotLeaderForPartitionError(f"broker {services.broker_id} hosts no replica of {topic}-{index}")
    raise UnknownTopicOrPartitionError(f"{topic}-{index} does not exist")


def _producer_state(entry) -> dict:
    return {
        "producer_id": entry.producer_id,
        "producer_epoch": entry.producer_epoch,
        "last_sequence": entry.last_seq,
        "last_timestamp": entry.last_timestamp,
        "coordinator_epoch": entry.coordinator_epoch,
        "current_txn_start_offset": (
            NO_TXN if entry.current_txn_first_offset is None else entry.current_txn_first_offset
        ),
    }
