"""Topic configs through confluent-kafka's admin: Kafka 3.9's names, and IncrementalAlterConfigs'
four operations."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

pytestmark = pytest.mark.cluster

INVALID_CONFIG = 40

KAFKA_39_DEFAULTS = {
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.zstd.level": "3",
    "segment.jitter.ms": "0",
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": str(2**63 - 1),
    "message.timestamp.before.max.ms": str(2**63 - 1),
    "message.timestamp.after.max.ms": str(2**63 - 1),
    "message.timestamp.difference.max.ms": str(2**63 - 1),
    "message.format.version": "3.0-IV1",
    "message.downconversion.enable": "true",
    "preallocate": "false",
    "file.delete.delay.ms": "60000",
    "leader.replication.throttled.replicas": "",
    "follower.replication.throttled.replicas": "",
    "remote.storage.enable": "false",
    "local.retention.ms": "-2",
    "local.retention.bytes": "-2",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
}


def _alter(admin: AdminClient, topic: str, name: str, value: str | None, op) -> None:
    resource = ConfigResource(
        ResourceType.TOPIC, topic, incremental_configs=[ConfigEntry(name, value, incremental_operation=op)]
    )
    admin.incremental_alter_configs([resource])[resource].result(10)


def _value(admin: AdminClient, topic: str, name: str) -> str:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(10)[name].value


def test_append_and_subtract_edit_list_configs_from_their_current_value(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("policies", 1, 1)])["policies"].result(10)
    _alter(admin, "policies", "cleanup.policy", "compact", AlterConfigOpType.APPEND)
    assert _value(admin, "policies", "cleanup.policy") == "delete,compact"  # default + item
    _alter(admin, "policies", "cleanup.policy", "compact", AlterConfigOpType.APPEND)
    assert _value(admin, "policies", "cleanup.policy") == "delete,compact"  # no duplicate
    _alter(admin, "policies", "cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)
    assert _value(admin, "policies", "cleanup.policy") == "compact"
    _alter(admin, "policies", "cleanup.policy", None, AlterConfigOpType.DELETE)
    assert _value(admin, "policies", "cleanup.policy") == "delete"


def test_append_to_a_config_that_is_not_a_list_is_invalid(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("scalar", 1, 1)])["scalar"].result(10)
    with pytest.raises(KafkaException) as raised:
        _alter(admin, "scalar", "retention.ms", "1000", AlterConfigOpType.APPEND)
    assert raised.value.args[0].code() == INVALID_CONFIG
    assert _value(admin, "scalar", "retention.ms") == str(7 * 24 * 3600 * 1000)


def test_every_kafka_39_topic_config_is_accepted_and_described(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("defaults", 1, 1)])["defaults"].result(10)
    admin.create_topics([NewTopic("explicit", 1, 1, config=KAFKA_39_DEFAULTS)])["explicit"].result(10)
    for topic, is_default in (("defaults", True), ("explicit", False)):
        resource = ConfigResource(ResourceType.TOPIC, topic)
        described = admin.describe_configs([resource])[resource].result(10)
        assert {name: described[name].value for name in KAFKA_39_DEFAULTS} == KAFKA_39_DEFAULTS
        assert {described[name].is_default for name in KAFKA_39_DEFAULTS} == {is_default}


def test_remote_storage_is_refused_as_by_a_broker_without_tiered_storage(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with pytest.raises(KafkaException) as raised:
        admin.create_topics([NewTopic("tiered", 1, 1, config={"remote.storage.enable": "true"})])[
            "tiered"
        ].result(10)
    assert raised.value.args[0].code() == INVALID_CONFIG
    assert "Tiered Storage functionality is disabled in the broker" in raised.value.args[0].str()


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("retention.ms", "abc", "Not a number of type LONG"),
        ("segment.bytes", "12x", "Not a number of type INT"),
        ("retention.ms", "-5", "Value must be at least -1"),
        ("min.cleanable.dirty.ratio", "half", "Not a number of type DOUBLE"),
        ("unclean.leader.election.enable", "maybe", "Expected value to be either true or false"),
    ],
)
def test_a_value_kafka_would_reject_is_refused_in_kafkas_words(cluster, name, value, reason):
    """INVALID_CONFIG with the message a Kafka broker sends, not a Python exception's text."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with pytest.raises(KafkaException) as raised:
        admin.create_topics([NewTopic("refused", 1, 1, config={name: value})])["refused"].result(10)
    assert raised.value.args[0].code() == INVALID_CONFIG
    assert raised.value.args[0].str() == f"Invalid value {value} for configuration {name}: {reason}"


def test_a_batch_older_than_message_timestamp_before_max_ms_is_invalid_timestamp(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    configs = {"message.timestamp.before.max.ms": "3600000"}
    admin.create_topics([NewTopic("recent", 1, 1, config=configs)])["recent"].result(10)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    errors = []
    now_ms = int(time.time() * 1000)
    for timestamp in (now_ms - 2 * 3600000, now_ms):
        producer.produce(
            "recent", b"value", timestamp=timestamp, on_delivery=lambda err, _msg: errors.append(err)
        )
        producer.flush(10)
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_TIMESTAMP
    assert errors[1] is None
