"""FindCoordinator: a group's coordinator is the leader of its __consumer_offsets partition.

The offsets topic is created on first use. Transactions are not offered.
"""

from kafka.errors import CoordinatorNotAvailableError

from brokerd.api.errors import error_code, error_message
from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC

KEY_TYPE_GROUP = 0


async def handle(broker, request) -> dict:
    body = request.body
    try:
        if body.key_type != KEY_TYPE_GROUP:
            raise CoordinatorNotAvailableError("brokerd has no transaction coordinator")
        coordinator = _coordinator(broker, body.key)
    except Exception as exc:
        return {"throttle_time_ms": 0, "error_code": error_code(exc),
                "error_message": error_message(exc), "node_id": -1, "host": "", "port": -1}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "node_id": coordinator.broker_id, "host": coordinator.host, "port": coordinator.port}


def _coordinator(broker, group_id: str):
    topic = broker.topics.get(OFFSETS_TOPIC) or broker.auto_create_topic(OFFSETS_TOPIC)
    record = topic and topic.partitions.get(broker.coordinator.partition_of(group_id))
    live = {b.broker_id: b for b in broker.live_brokers}
    if record is None or record.leader not in live:
        raise CoordinatorNotAvailableError(f"the coordinator of {group_id!r} is not available")
    return live[record.leader]
