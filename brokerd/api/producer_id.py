"""InitProducerId: ids for idempotent producers (kafka-python 3 asks for one by default), and
ids plus epochs of transactional producers, which the transaction coordinator hands out."""

from brokerd.api.errors import error_code
from brokerd.api.transactions import fenced_code

FIRST_PRODUCER_FENCED_VERSION = 4


async def handle(broker, request) -> dict:
    body = request.body
    if body.transactional_id is None:
        return {"throttle_time_ms": 0, "error_code": 0,
                "producer_id": broker.producer_ids.next_id(), "producer_epoch": 0}
    try:
        producer_id, epoch = await broker.transactions.init_producer_id(
            body.transactional_id, body.transaction_timeout_ms)
    except Exception as exc:
        return {"throttle_time_ms": 0, "producer_id": -1, "producer_epoch": -1,
                "error_code": fenced_code(error_code(exc), request, FIRST_PRODUCER_FENCED_VERSION)}
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": producer_id,
            "producer_epoch": epoch}
