"""What admin clients ask about the cluster itself: DescribeCluster, DescribeLogDirs,
ListGroups with its filters, and the operations a client is authorized for."""

from __future__ import annotations

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as ACLResourceType
from kafka.errors import SecurityDisabledError
from kafka.protocol.api_key import ApiKey

from tests.cluster_harness import wait_until
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster


def test_describe_cluster_names_every_live_broker_and_the_controller(cluster_factory):
    cluster = cluster_factory(3)
    # librdkafka sends DescribeCluster to the controller it last read in Metadata; when that
    # one dies it retries it until its next metadata refresh (every 5 minutes by default).
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "topic.metadata.refresh.interval.ms": 1000})

    def nodes(expected: list[int]):
        try:
            described = admin.describe_cluster(request_timeout=2).result(3)
        except KafkaException:  # asked the broker that was just killed
            return False
        return sorted(n.id for n in described.nodes) == expected and described

    described = wait_until(lambda: nodes([1, 2, 3]), 10, "three live brokers")
    assert {n.port for n in described.nodes} == set(cluster.ports.values())
    assert described.controller.id == cluster.state.controller()[0]
    assert described.cluster_id == cluster.state.cluster_id()

    # The controller dies: a survivor asked at once names a live controller, never the dead
    # one that librdkafka would wait on for controller-bound requests (DescribeCluster too).
    dead = described.controller.id
    survivors = sorted(b for b in cluster.ports if b != dead)
    cluster.kill(dead)
    metadata = raw_request(cluster.ports[survivors[0]], ApiKey.Metadata, 1, {"topics": []})
    assert metadata.controller_id in survivors
    wait_until(lambda: nodes(survivors), 15, "the killed broker to drop out")


def test_without_an_authorizer_every_supported_operation_is_authorized(cluster):
    """As Kafka answers without an authorizer (KIP-430): all the resource type supports."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("ops", 1, 1)])["ops"].result(10)
    cluster_ops = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert set(cluster_ops.authorized_operations) == {
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    }
    described = admin.describe_topics(TopicCollection(["ops"]), include_authorized_operations=True)[
        "ops"
    ].result(10)
    assert len(described.authorized_operations) == 8 and AclOperation.WRITE in described.authorized_operations
    assert admin.describe_cluster().result(10).authorized_operations is None  # not asked


def test_describe_log_dirs_reports_each_replica_and_its_size(cluster):
    creator = AdminClient({"bootstrap.servers": cluster.bootstrap})
    creator.create_topics([NewTopic("sized", 2, 1)])["sized"].result(10)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for _ in range(100):
        producer.produce("sized", b"x" * 100, partition=0)
    assert producer.flush(10) == 0
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        described = admin.describe_log_dirs()
    finally:
        admin.close()
    (log_dir,) = described[0]["log_dirs"] if "log_dirs" in described[0] else described[0]["results"]
    assert log_dir["error_code"] == 0
    assert log_dir["log_dir"] == str((cluster.state.broker_dir(1) / "data").resolve())
    sizes = {
        p["partition_index"]: p["partition_size"]
        for t in log_dir["topics"]
        if t["name"] == "sized"
        for p in t["partitions"]
    }
    assert sizes[1] == 0
    assert 100 * 100 < sizes[0] < 100 * 200  # the records and their batch overhead
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]


def test_list_groups_filters_by_state_and_type(cluster):
    creator = AdminClient({"bootstrap.servers": cluster.bootstrap})
    creator.create_topics([NewTopic("listed", 1, 1)])["listed"].result(10)
    committer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "idle"})
    committer.commit(offsets=[TopicPartition("listed", 0, 1)], asynchronous=False)
    committer.close()
    member = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "busy"})
    member.subscribe(["listed"])
    try:

        def listed(**filters) -> set[str]:
            found = creator.list_consumer_groups(request_timeout=10, **filters).result(10)
            return {g.group_id for g in found.valid}

        wait_until(
            lambda: member.poll(0.1) or "busy" in listed(states={ConsumerGroupState.STABLE}),
            15,
            "the busy group to be stable",
        )
        assert listed(states={ConsumerGroupState.EMPTY}) == {"idle"}
        assert listed(states={ConsumerGroupState.STABLE}) == {"busy"}
        assert listed(types={ConsumerGroupType.CLASSIC}) == {"idle", "busy"}
        assert listed(types={ConsumerGroupType.CONSUMER}) == set()
    finally:
        member.close()


def test_acl_requests_are_refused_as_without_an_authorizer(cluster):
    """kctl has no authentication or authorizer; Kafka then answers SECURITY_DISABLED."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    binding = AclBinding(
        ResourceType.TOPIC,
        "t",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    every = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    for future in (admin.create_acls([binding])[binding], admin.delete_acls([every])[every]):
        with pytest.raises(KafkaException) as refused:
            future.result(10)
        assert refused.value.args[0].code() == KafkaError.SECURITY_DISABLED
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        with pytest.raises(SecurityDisabledError):
            client.describe_acls(
                ACLFilter(
                    principal=None,
                    host="*",
                    operation=ACLOperation.ANY,
                    permission_type=ACLPermissionType.ANY,
                    resource_pattern=ResourcePatternFilter(
                        ACLResourceType.ANY, None, ACLResourcePatternType.ANY
                    ),
                )
            )
    finally:
        client.close()
