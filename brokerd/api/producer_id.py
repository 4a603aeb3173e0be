"""InitProducerId: ids for idempotent producers (kafka-python 3 asks for one by default)."""

from kafka.errors import TransactionalIdAuthorizationFailedError


async def handle(broker, request) -> dict:
    if request.body.transactional_id is not None:
        return {"throttle_time_ms": 0, "error_code": TransactionalIdAuthorizationFailedError.errno,
                "producer_id": -1, "producer_epoch": -1}
    return {"throttle_time_ms": 0, "error_code": 0,
            "producer_id": broker.producer_ids.next_id(), "producer_epoch": 0}
