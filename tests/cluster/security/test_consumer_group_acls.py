"""KIP-848 consumer groups on a secured broker check what Kafka checks: READ on the group to
heartbeat, DESCRIBE on every topic subscribed by name, DESCRIBE on the group (which READ
implies) to describe it."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka.protocol.api_key import ApiKey

from brokerd.state import ClusterState
from tests.cluster_harness import running_cluster, wait_until
from tests.kafka_helpers import create_topic
from tests.raw_request import RawConnection
from tests.security_harness import add_scram_user, sasl_settings, secure_cluster_dir

pytestmark = pytest.mark.cluster

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
USER = "dave"
PASSWORD = "dave-secret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("kip848-acls")
    admin_password, overrides = secure_cluster_dir(directory)
    add_scram_user(ClusterState(directory), USER, PASSWORD)
    with running_cluster(directory, 1, overrides, "SASL_PLAINTEXT") as running:
        running.admin = AdminClient(
            {"bootstrap.servers": running.bootstrap, **sasl_settings("admin", admin_password)}
        )
        running.admin_settings = sasl_settings("admin", admin_password)
        yield running


def allow(operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
    return AclBinding(
        resource_type,
        name,
        ResourcePatternType.LITERAL,
        f"User:{USER}",
        "*",
        operation,
        AclPermissionType.ALLOW,
    )


def logged_in(cluster) -> RawConnection:
    conn = RawConnection(next(iter(cluster.ports.values())))
    assert conn.request(ApiKey.SaslHandshake, 1, {"mechanism": "PLAIN"}).error_code == 0
    login = conn.request(ApiKey.SaslAuthenticate, 1, {"auth_bytes": f"\0{USER}\0{PASSWORD}".encode()})
    assert login.error_code == 0
    return conn


def test_heartbeats_and_descriptions_need_kafkas_permissions(cluster) -> None:
    create_topic(cluster.admin, "dave-t", 1, 1)
    create_topic(cluster.admin, "secret-t", 1, 1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, **cluster.admin_settings})
    producer.produce("dave-t", b"hello")
    assert producer.flush(10) == 0
    bindings = [
        allow(AclOperation.READ, ResourceType.TOPIC, "dave-t"),
        allow(AclOperation.READ, ResourceType.GROUP, "dave-g"),
    ]
    for future in cluster.admin.create_acls(bindings).values():
        future.result(10)

    def consumed() -> bool:
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                **sasl_settings(USER, PASSWORD),
                "group.id": "dave-g",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "log_level": 0,
            }
        )
        consumer.subscribe(["dave-t"])
        try:
            for _ in range(20):
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    return message.value() == b"hello"
        finally:
            consumer.close()
        return False

    wait_until(consumed, 60, "dave to consume with group.protocol=consumer")
    with logged_in(cluster) as conn:

        def heartbeat(group: str, topic: str):
            body = {
                "group_id": group,
                "member_id": f"raw-{group}-{topic}",
                "member_epoch": 0,
                "rebalance_timeout_ms": 30000,
                "subscribed_topic_names": [topic],
                "topic_partitions": [],
            }
            return conn.request(ApiKey.ConsumerGroupHeartbeat, 1, body)

        assert heartbeat("dave-other", "dave-t").error_code == GROUP_AUTHORIZATION_FAILED
        assert heartbeat("dave-g", "secret-t").error_code == TOPIC_AUTHORIZATION_FAILED
        described = conn.request(
            ApiKey.ConsumerGroupDescribe,
            1,
            {"group_ids": ["dave-g", "dave-other"], "include_authorized_operations": True},
        )
        codes = {g.group_id: g.error_code for g in described.groups}
        # READ on a group implies DESCRIBE on it, as in Kafka
        assert codes == {"dave-g": 0, "dave-other": GROUP_AUTHORIZATION_FAILED}
        assert described.groups[0].group_state == "Empty"  # dave's consumer left on close
