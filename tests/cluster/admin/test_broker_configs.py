"""Dynamic broker configs (KIP-226) through confluent-kafka's admin client on real brokers:
per broker ("<id>") and cluster-wide (""), Kafka's precedence and refusals, and their effect."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka.protocol.api_key import ApiKey

from tests.cluster_harness import wait_until
from tests.kafka_helpers import raw_set_broker_config
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster

INVALID_CONFIG = 40
INVALID_REQUEST = 42
HOUR_MS = 3600 * 1000


def _admin(cluster) -> AdminClient:
    """An admin client that knows, and is connected to, every broker: a broker that has just
    started may answer the first Metadata before it has seen the others register, and
    librdkafka may then wait seconds before sending a broker resource to its broker."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "enable.sparse.connections": False})
    wait_until(
        lambda: len(admin.list_topics(timeout=5).brokers) == len(cluster.ports),
        10,
        "the admin client to know every broker",
    )
    return admin


def _alter(
    admin: AdminClient,
    name: str,
    *entries: tuple[str, str | None, AlterConfigOpType],
    validate_only: bool = False,
) -> None:
    resource = ConfigResource(
        ResourceType.BROKER,
        name,
        incremental_configs=[
            ConfigEntry(config, value, incremental_operation=op) for config, value, op in entries
        ],
    )
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(10)


def _describe(admin: AdminClient, kind: ResourceType, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource])[resource].result(10)


def _refusal(call) -> tuple[int, str]:
    with pytest.raises(KafkaException) as raised:
        call()
    return raised.value.args[0].code(), raised.value.args[0].str()


SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE


def _raw_describe(port: int, broker: str):
    """DescribeConfigs v1 of one broker resource, with synonyms; returns its result."""
    return raw_request(
        port,
        ApiKey.DescribeConfigs,
        1,
        {
            "include_synonyms": True,
            "resources": [
                {
                    "resource_type": ResourceType.BROKER.value,
                    "resource_name": broker,
                    "configuration_keys": None,
                }
            ],
        },
    ).results[0]


def test_a_dynamic_config_is_described_with_its_source_beside_static_ones(cluster_factory):
    cluster = cluster_factory(1, {"num.partitions": "2"})
    admin = _admin(cluster)
    _alter(admin, "1", ("sasl.kerberos.min.time.before.relogin", "58000", SET))
    configs = _describe(admin, ResourceType.BROKER, "1")
    relogin = configs["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.value, relogin.source, relogin.is_read_only) == (
        "58000",
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        False,
    )
    partitions = configs["num.partitions"]
    assert (partitions.value, partitions.source, partitions.is_read_only) == (
        "2",
        ConfigSource.STATIC_BROKER_CONFIG.value,
        True,
    )
    threads = configs["background.threads"]
    assert (threads.value, threads.source, threads.is_read_only) == (
        "10",
        ConfigSource.DEFAULT_CONFIG.value,
        False,
    )


def test_a_broker_s_own_config_wins_over_the_cluster_default(cluster_factory):
    cluster = cluster_factory(2)
    admin = _admin(cluster)
    assert raw_set_broker_config(cluster.ports[2], "", "log.retention.ms", "7000000").error_code == 0
    _alter(admin, "1", ("log.retention.ms", "5000000", SET))

    def retention(broker: str) -> tuple[str, int]:
        entry = _describe(admin, ResourceType.BROKER, broker)["log.retention.ms"]
        return entry.value, entry.source

    wait_until(
        lambda: retention("2") == ("7000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
        5,
        "broker 2 to take the cluster default",
    )
    assert retention("1") == ("5000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    synonyms = [
        (s.value, s.source)
        for s in next(
            c for c in _raw_describe(cluster.ports[1], "1").configs if c.name == "log.retention.ms"
        ).synonyms
    ]
    assert synonyms == [("5000000", 2), ("7000000", 3), (str(7 * 24 * HOUR_MS), 5)]
    cluster_wide = _raw_describe(cluster.ports[1], "").configs
    assert [(c.name, c.value, c.config_source) for c in cluster_wide] == [
        ("log.retention.ms", "7000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    ]
    _alter(admin, "1", ("log.retention.ms", None, DELETE))
    assert retention("1") == ("7000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)


def test_static_and_unknown_configs_are_refused_with_kafka_s_message(cluster):
    admin = _admin(cluster)
    code, message = _refusal(lambda: _alter(admin, "1", ("num.partitions", "3", SET)))
    assert code == INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(num.partitions)" in message
    code, message = _refusal(lambda: _alter(admin, "1", ("no.such.config", "1", SET)))
    assert (code, "Set(no.such.config)" in message) == (INVALID_REQUEST, True)
    cluster_wide = raw_set_broker_config(cluster.ports[1], "", "sasl.kerberos.min.time.before.relogin", "1")
    assert cluster_wide.error_code == INVALID_REQUEST
    assert "Cannot update these configs at default cluster level" in cluster_wide.error_message
    another = raw_set_broker_config(cluster.ports[1], "2", "background.threads", "9")
    assert another.error_code == INVALID_REQUEST
    assert "Unexpected broker id, expected 1, but received 2" in another.error_message
    code, _ = _refusal(lambda: _alter(admin, "1", ("num.io.threads", "many", SET)))
    assert code == INVALID_REQUEST
    assert _describe(admin, ResourceType.BROKER, "1")["num.io.threads"].value == "8"


def test_validate_only_changes_nothing(cluster):
    admin = _admin(cluster)
    _alter(admin, "1", ("background.threads", "12", SET), validate_only=True)
    entry = _describe(admin, ResourceType.BROKER, "1")["background.threads"]
    assert (entry.value, entry.source) == ("10", ConfigSource.DEFAULT_CONFIG.value)


def test_append_and_subtract_edit_a_list_config_and_refuse_others(cluster):
    admin = _admin(cluster)

    def policy() -> str:
        return _describe(admin, ResourceType.BROKER, "1")["log.cleanup.policy"].value

    _alter(admin, "1", ("log.cleanup.policy", "compact", AlterConfigOpType.APPEND))
    assert policy() == "delete,compact"
    _alter(admin, "1", ("log.cleanup.policy", "delete", AlterConfigOpType.SUBTRACT))
    assert policy() == "compact"
    code, message = _refusal(
        lambda: _alter(admin, "1", ("background.threads", "1", AlterConfigOpType.APPEND))
    )
    assert code == INVALID_CONFIG
    assert "append is not allowed for config key: background.threads" in message


def test_legacy_alter_configs_replaces_the_broker_s_whole_set(cluster):
    admin = _admin(cluster)
    _alter(admin, "1", ("background.threads", "12", SET), ("num.io.threads", "9", SET))
    resource = ConfigResource(ResourceType.BROKER, "1", set_config={"num.io.threads": "10"})
    admin.alter_configs([resource])[resource].result(10)
    configs = _describe(admin, ResourceType.BROKER, "1")
    assert configs["num.io.threads"].value == "10"
    assert configs["background.threads"].source == ConfigSource.DEFAULT_CONFIG.value


def test_dynamic_configs_survive_a_broker_restart(cluster):
    _alter(_admin(cluster), "1", ("background.threads", "12", SET))
    cluster.stop(1)
    cluster.start(1)
    entry = _describe(_admin(cluster), ResourceType.BROKER, "1")["background.threads"]
    assert (entry.value, entry.source) == ("12", ConfigSource.DYNAMIC_BROKER_CONFIG.value)


def test_message_max_bytes_refuses_a_bigger_batch_once_lowered(cluster):
    admin = _admin(cluster)
    admin.create_topics([NewTopic("sized", 1, 1)])["sized"].result(10)
    _alter(admin, "1", ("message.max.bytes", "2000", SET))
    errors = []
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, "message.send.max.retries": 0}
    )
    producer.produce("sized", b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert errors and errors[0] is not None and errors[0].code() == errors[0].MSG_SIZE_TOO_LARGE
    topic = _describe(admin, ResourceType.TOPIC, "sized")["max.message.bytes"]
    assert (topic.value, topic.source) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert "message.max.bytes" in topic.synonyms


def test_a_dynamic_log_retention_default_deletes_old_segments_of_topics_without_their_own(cluster_factory):
    cluster = cluster_factory(1, {"log.retention.check.interval.ms": "200"})
    admin = _admin(cluster)
    admin.create_topics([NewTopic("defaulted", 1, 1), NewTopic("kept", 1, 1, config={"retention.ms": "-1"})])
    wait_until(
        lambda: {"defaulted", "kept"} <= set(admin.list_topics(timeout=5).topics), 10, "topics to exist"
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    an_hour_ago = int(time.time() * 1000) - HOUR_MS
    for topic in ("defaulted", "kept"):
        for i in range(10):
            producer.produce(topic, b"old %d" % i, timestamp=an_hour_ago)
    assert producer.flush(10) == 0
    assert raw_set_broker_config(cluster.ports[1], "", "log.retention.ms", str(HOUR_MS // 2)).error_code == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "watermarks"})

    def log_start(topic: str) -> int:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[0]

    wait_until(lambda: log_start("defaulted") == 10, 10, "retention to delete the old segment")
    assert log_start("kept") == 0
    consumer.close()
