"""TLS listeners: SASL_SSL between three brokers that replicate as the super user, and SSL
with client certificates naming the principal; kcat and confluent-kafka as the clients."""

from __future__ import annotations

import subprocess

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from brokerd.security import client_properties
from tests.cluster_harness import running_cluster, wait_until
from tests.security_harness import admin_settings, secure_cluster_dir

pytestmark = [pytest.mark.cluster, pytest.mark.interop]


@pytest.fixture(scope="module")
def sasl_ssl_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("sasl_ssl")
    _, overrides = secure_cluster_dir(directory, "SASL_SSL")
    overrides["default.replication.factor"] = "3"
    with running_cluster(directory, 3, overrides, "SASL_SSL") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def ssl_cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ssl")
    _, overrides = secure_cluster_dir(directory, "SSL")
    with running_cluster(directory, 1, overrides, "SSL") as cluster:
        yield cluster


def admin(cluster) -> AdminClient:
    return AdminClient(
        {"bootstrap.servers": cluster.bootstrap, "log_level": 0, **admin_settings(cluster.dir)}
    )


def test_brokers_replicate_over_sasl_ssl_and_keep_full_isrs(sasl_ssl_cluster):
    client = admin(sasl_ssl_cluster)
    client.create_topics([NewTopic("replicated", 3, 3, config={"min.insync.replicas": "3"})])[
        "replicated"
    ].result(10)
    producer = Producer(
        {
            "bootstrap.servers": sasl_ssl_cluster.bootstrap,
            "acks": "all",
            "log_level": 0,
            **admin_settings(sasl_ssl_cluster.dir),
        }
    )
    delivered = []
    for i in range(300):
        producer.produce(
            "replicated", str(i).encode(), partition=i % 3, on_delivery=lambda err, msg: delivered.append(err)
        )
    producer.flush(30)
    assert delivered == [None] * 300  # acks=all with min.insync.replicas=3: every follower fetched

    def isrs_full():
        topic = client.describe_topics(TopicCollection(["replicated"]))["replicated"].result(10)
        return all(len(p.isr) == 3 for p in topic.partitions)

    wait_until(isrs_full, 10, "every ISR to hold all three brokers")


def test_kcat_reads_admin_properties_and_lists_brokers_over_tls(sasl_ssl_cluster):
    result = subprocess.run(
        [
            "kcat",
            "-F",
            str(client_properties.path(sasl_ssl_cluster.dir)),
            "-b",
            sasl_ssl_cluster.bootstrap,
            "-L",
            "-m",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "3 brokers" in result.stdout and "sasl_ssl://" in result.stdout


def test_a_plaintext_client_cannot_talk_to_a_tls_listener(sasl_ssl_cluster):
    producer = Producer(
        {
            "bootstrap.servers": sasl_ssl_cluster.bootstrap,
            "log_level": 0,
            "socket.connection.setup.timeout.ms": 2000,
        }
    )
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=3)


def test_a_client_certificate_names_the_principal(ssl_cluster):
    """CN=admin is the super user: it may describe ACLs (DESCRIBE on the cluster)."""
    everything = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert admin(ssl_cluster).describe_acls(everything).result(10) == []


def test_a_client_without_a_certificate_is_refused_when_client_auth_is_required(ssl_cluster):
    settings = admin_settings(ssl_cluster.dir)
    errors = []
    producer = Producer(
        {
            "bootstrap.servers": ssl_cluster.bootstrap,
            "log_level": 0,
            "security.protocol": "SSL",
            "ssl.ca.location": settings["ssl.ca.location"],
            "error_cb": errors.append,
        }
    )
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=3)
    producer.poll(0)
    assert any(
        e.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) for e in errors
    ), errors
