"""InitProducerId: ids for idempotent producers (kafka-python 3 asks for one by default), and
ids plus epochs of transactional producers, which the transaction coordinator hands out.

From v3 a producer may name its current id and epoch to have the epoch bumped and recover
from an abortable error without a new identity (KIP-360); librdkafka needs this to abort a
transaction after a message timed out. As in Kafka, an idempotent producer asking so simply
gets a new id."""

from kafka.errors import InvalidRequestError

from brokerd.api.errors import error_code
from brokerd.api.transactions import fenced_code

FIRST_PRODUCER_FENCED_VERSION = 4
NO_PRODUCER_ID = NO_PRODUCER_EPOCH = -1


async def handle(broker, request) -> dict:
    body = request.body
    try:
        expected = _expected_producer(body)
        if body.transactional_id is None:
            producer_id, epoch = broker.producer_ids.next_id(), 0
        else:
            producer_id, epoch = await broker.transactions.init_producer_id(
                body.transactional_id, body.transaction_timeout_ms, expected)
    except Exception as exc:
        return {"throttle_time_ms": 0, "producer_id": -1, "producer_epoch": -1,
                "error_code": fenced_code(error_code(exc), request, FIRST_PRODUCER_FENCED_VERSION)}
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": producer_id,
            "producer_epoch": epoch}


def _expected_producer(body) -> tuple[int, int] | None:
    """The (id, epoch) a v3+ request names, None when it names none; one without the other
    is INVALID_REQUEST, as in Kafka."""
    producer_id = getattr(body, "producer_id", NO_PRODUCER_ID)
    epoch = getattr(body, "producer_epoch", NO_PRODUCER_EPOCH)
    if (producer_id, epoch) == (NO_PRODUCER_ID, NO_PRODUCER_EPOCH):
        return None
    if NO_PRODUCER_ID in (producer_id, epoch):
        raise InvalidRequestError(f"producer id {producer_id} and epoch {epoch} must be "
                                  "given together")
    return producer_id, epoch
