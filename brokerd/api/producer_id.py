"""InitProducerId: ids for idempotent producers (kafka-python 3 asks for one by default), and
ids plus epochs of transactional producers, which the transaction coordinator hands out.

From v3 a producer may name its current id and epoch to have the epoch bumped and recover
from an abortable error without a new identity (KIP-360); librdkafka needs this to abort a
transaction after a message timed out. As in Kafka, an idempotent producer asking so simply
gets a new id.

As in Kafka, a transactional producer needs WRITE on its transactional id (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one IDEMPOTENT_WRITE on the cluster or
WRITE on some topic (else CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import InvalidRequestError

from brokerd.api.authorization import allows_cluster, denied, require
from brokerd.api.errors import error_code
from brokerd.api.request import Request
from brokerd.api.transactions import fenced_code
from brokerd.ports.services import BrokerServices
from brokerd.security.standard_authorizer import StandardAuthorizer

FIRST_PRODUCER_FENCED_VERSION = 4
NO_PRODUCER_ID = NO_PRODUCER_EPOCH = -1


async def handle(services: BrokerServices, request: Request) -> dict:
    body = request.body
    try:
        _authorize(services.security.authorizer, request)
        expected = _expected_producer(body)
        if body.transactional_id is None:
            producer_id, epoch = services.transactions.producer_ids.next_id(), 0
        else:
            producer_id, epoch = await services.transactions.coordinator.init_producer_id(
                body.transactional_id, body.transaction_timeout_ms, expected
            )
    except Exception as exc:
        return {
            "throttle_time_ms": 0,
            "producer_id": -1,
            "producer_epoch": -1,
            "error_code": fenced_code(
                error_code(exc), request.header.api_version, FIRST_PRODUCER_FENCED_VERSION
            ),
        }
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": producer_id, "producer_epoch": epoch}


def _authorize(authorizer: StandardAuthorizer, request: Request) -> None:
    transactional_id = request.body.transactional_id
    if transactional_id is not None:
        require(
            authorizer,
            request.session,
            ACLOperation.WRITE,
            ResourceType.TRANSACTIONAL_ID,
            transactional_id,
        )
    elif not (
        allows_cluster(authorizer, request.session, ACLOperation.IDEMPOTENT_WRITE, audit=False)
        or authorizer.authorize_any(request.session, ACLOperation.WRITE, ResourceType.TOPIC)
    ):
        raise denied(ResourceType.CLUSTER)


def _expected_producer(body) -> tuple[int, int] | None:
    """The (id, epoch) a v3+ request names, None when it names none; one without the other
    is INVALID_REQUEST, as in Kafka."""
    producer_id = getattr(body, "producer_id", NO_PRODUCER_ID)
    epoch = getattr(body, "producer_epoch", NO_PRODUCER_EPOCH)
    if (producer_id, epoch) == (NO_PRODUCER_ID, NO_PRODUCER_EPOCH):
        return None
    if NO_PRODUCER_ID in (producer_id, epoch):
        raise InvalidRequestError(f"producer id {producer_id} and epoch {epoch} must be given together")
    return producer_id, epoch
