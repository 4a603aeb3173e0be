"""Configs as DescribeConfigs answers them: every config of a topic or a broker, with where
its value comes from."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from kctl.kafka.client import Connection
from kctl.kafka.errors import exit_code_for
from kctl.shell.errors import KctlError

DEFAULT_SOURCE = ConfigSource.DEFAULT_CONFIG.name.lower()  # the value nobody set


def topic_configs(conn: Connection, topic: str) -> dict[str, dict]:
    """name -> {"value", "source"} for every config of a topic (source in Kafka's words, lower
    case: dynamic_topic_config, default_config, ...); a KctlError when the cluster cannot
    describe them."""
    return _describe(conn, ConfigResource(ResourceType.TOPIC, topic), f"configs of {topic!r}")


def broker_configs(conn: Connection, broker_id: int) -> dict[str, dict]:
    """name -> {"value", "source"} for every setting of a broker, as topic_configs."""
    resource = ConfigResource(ResourceType.BROKER, str(broker_id))
    return _describe(conn, resource, f"configs of broker {broker_id}")


def _describe(conn: Connection, resource: ConfigResource, what: str) -> dict[str, dict]:
    try:
        entries = conn.admin().describe_configs([resource], request_timeout=conn.timeout)[resource].result()
    except KafkaException as exc:
        error = exc.args[0]
        raise KctlError(f"{what} unavailable: {error.str()}", exit_code_for(error)) from None
    return {name: {"value": e.value, "source": _source_name(e.source)} for name, e in sorted(entries.items())}


def _source_name(source: int) -> str:
    """Kafka's name of a config source in lower case; its number, for a source confluent-kafka
    does not know."""
    try:
        return ConfigSource(source).name.lower()
    except ValueError:
        return str(source)
