"""IncrementalAlterConfigs' four operations on topic configs, with confluent-kafka's admin."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType,
)

INVALID_CONFIG = 40


def _alter(admin: AdminClient, topic: str, name: str, value: str | None, op) -> None:
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op)])
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
