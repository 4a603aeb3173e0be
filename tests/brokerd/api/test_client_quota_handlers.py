"""DescribeClientQuotas and AlterClientQuotas handlers in-process: the cluster permissions
Kafka asks for, and a user quota throttling that user's produce requests whatever its client
id (brokerd.api.client_quotas over a real state directory, no broker process)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kafka.admin import ACLOperation, ResourceType
from kafka.protocol.api_key import ApiKey

from brokerd.api import client_quotas
from brokerd.api.request import Request
from brokerd.protocol.codec import RequestHeader, decode_request, encode_request
from brokerd.quotas import ClientQuotas
from brokerd.security.principal import KafkaPrincipal, Session
from brokerd.state import ClusterState

pytestmark = pytest.mark.unit

CLUSTER_AUTHORIZATION_FAILED = 31


class Authorizer:
    def __init__(self, allowed: bool):
        self.allowed = allowed
        self.asked = []

    def authorize(self, session, operation, resource_type, name, audit=True):
        self.asked.append((str(session.principal), operation, resource_type, name))
        return self.allowed


def broker(tmp_path, allowed=True):
    state = ClusterState(tmp_path)
    state.initialize({1: 9092})
    authorizer = Authorizer(allowed)
    # the handlers' services (quotas, security) and, for the checks, the state and authorizer
    return SimpleNamespace(
        quotas=state, security=SimpleNamespace(authorizer=authorizer), state=state, authorizer=authorizer
    )


def request(api_key: int, version: int, body: dict, user="alice", client_id="app"):
    header = RequestHeader(api_key, version, 1, client_id)
    decoded = decode_request(encode_request(header, body)[4:])
    return Request(*decoded, Session(KafkaPrincipal("User", user), "127.0.0.1"))


def alter_request(entity: dict, key: str, value: float, **kwargs):
    return request(
        ApiKey.AlterClientQuotas,
        1,
        {
            "validate_only": False,
            "entries": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                    "ops": [{"key": key, "value": value, "remove": False}],
                }
            ],
        },
        **kwargs,
    )


DESCRIBE_ALL = {"strict": False, "components": []}


def test_alter_needs_alter_configs_and_describe_describe_configs_on_the_cluster(tmp_path):
    denied = broker(tmp_path, allowed=False)
    response = asyncio.run(
        client_quotas.handle_alter(denied, alter_request({"user": "bob"}, "producer_byte_rate", 1000))
    )
    assert response["entries"][0]["error_code"] == CLUSTER_AUTHORIZATION_FAILED
    response = asyncio.run(
        client_quotas.handle_describe(denied, request(ApiKey.DescribeClientQuotas, 1, DESCRIBE_ALL))
    )
    assert response["error_code"] == CLUSTER_AUTHORIZATION_FAILED
    assert [a[1:] for a in denied.authorizer.asked] == [
        (ACLOperation.ALTER_CONFIGS, ResourceType.CLUSTER, "kafka-cluster"),
        (ACLOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, "kafka-cluster"),
    ]
    assert denied.state.client_quotas() == []


def test_user_quota_throttles_every_client_id_of_that_user(tmp_path):
    b = broker(tmp_path)
    response = asyncio.run(
        client_quotas.handle_alter(b, alter_request({"user": "alice"}, "producer_byte_rate", 1000))
    )
    assert response["entries"][0]["error_code"] == 0
    quotas = ClientQuotas(b.state.client_quotas_version, b.state.client_quotas)

    async def produced(broker, req):
        return {"responses": [], "throttle_time_ms": 0}

    handle = client_quotas.throttled_produce(produced, quotas)

    def produce(user, client_id):
        body = {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"x" * 6000}]}],
        }
        return asyncio.run(handle(b, request(ApiKey.Produce, 8, body, user, client_id)))

    assert produce("alice", "one")["throttle_time_ms"] == 0
    # alice's second client id shares the quota: 12,000 bytes over 10 s against 1,000 B/s
    assert produce("alice", "two")["throttle_time_ms"] > 1000
    assert produce("bob", "one")["throttle_time_ms"] == 0
