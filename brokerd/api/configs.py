"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics (and broker reads)."""

from __future__ import annotations

from kafka.errors import (
    InvalidConfigurationError, InvalidRequestError, UnknownTopicOrPartitionError,
)

from brokerd.api.errors import error_code, error_message
from brokerd.storage import LogConfig
from brokerd.storage.log_config import KEYS_BY_NAME

TOPIC = 2
BROKER = 4
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


async def handle_describe(broker, request) -> dict:
    results = []
    for resource in request.body.resources:
        try:
            entries = _describe(broker, resource)
            keys = resource.configuration_keys
            configs = [e for e in entries if keys is None or e["name"] in keys]
            results.append(_result(resource, None, configs=configs))
        except Exception as exc:
            results.append(_result(resource, exc, configs=[]))
    return {"throttle_time_ms": 0, "results": results}


def _describe(broker, resource) -> list[dict]:
    if resource.resource_type == TOPIC:
        topic = broker.topics.get(resource.resource_name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {resource.resource_name!r} does not exist")
        rows, dynamic = LogConfig.describe(topic.configs), SOURCE_DYNAMIC_TOPIC
    elif resource.resource_type == BROKER:
        rows, dynamic = broker.config.describe(), SOURCE_STATIC_BROKER
    else:
        raise InvalidRequestError(f"resource type {resource.resource_type} is not supported")
    return [{"name": name, "value": value, "read_only": resource.resource_type == BROKER,
             "is_default": is_default, "config_source": SOURCE_DEFAULT if is_default else dynamic,
             "is_sensitive": False, "synonyms": []}
            for name, value, is_default in rows]


async def handle_alter(broker, request) -> dict:
    """Legacy AlterConfigs replaces a topic's whole set of overrides."""
    def replace(current: dict, configs) -> dict:
        return {c.name: c.value for c in configs}
    return _alter_all(broker, request, replace)


async def handle_incremental_alter(broker, request) -> dict:
    def apply(current: dict, configs) -> dict:
        updated = dict(current)
        for c in configs:
            if c.config_operation == OP_SET:
                updated[c.name] = c.value
            elif c.config_operation == OP_DELETE:
                updated.pop(c.name, None)
            elif c.config_operation in (OP_APPEND, OP_SUBTRACT):
                updated[c.name] = _edit_list(current, c.name, c.value, c.config_operation)
            else:
                raise InvalidConfigurationError(f"{c.name}: unknown operation {c.config_operation}")
        return updated
    return _alter_all(broker, request, apply)


def _edit_list(current: dict, name: str, value: str | None, operation: int) -> str:
    """APPEND adds the comma-separated ``value`` items missing from a LIST config, SUBTRACT
    removes them; the current value, or else the default, is the starting point (Kafka's
    rule). Other types refuse both, as in Kafka."""
    key = KEYS_BY_NAME.get(name)
    if key is None or key.config_type != "LIST":
        raise InvalidConfigurationError(f"{name}: APPEND and SUBTRACT apply to LIST configs only")
    items = [v.strip() for v in current.get(name, key.default).split(",") if v.strip()]
    given = [v.strip() for v in (value or "").split(",") if v.strip()]
    if operation == OP_APPEND:
        return ",".join(items + [v for v in given if v not in items])
    return ",".join(v for v in items if v not in given)


def _alter_all(broker, request, change) -> dict:
    body = request.body
    responses = []
    for resource in body.resources:
        try:
            if resource.resource_type != TOPIC:
                raise InvalidRequestError("only topic configs can be altered")
            _alter_topic(broker, resource, change, body.validate_only)
            responses.append(_result(resource, None))
        except Exception as exc:
            responses.append(_result(resource, exc))
    broker.refresh_metadata()
    return {"throttle_time_ms": 0, "responses": responses}


def _alter_topic(broker, resource, change, validate_only: bool) -> None:
    with broker.state.update_topic_configs() as topics:
        topic = topics.get(resource.resource_name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {resource.resource_name!r} does not exist")
        updated = change(topic.configs, resource.configs)
        LogConfig.from_configs(updated)
        if not validate_only:
            topic.configs = updated


def _result(resource, exc: Exception | None, **extra) -> dict:
    return {"error_code": 0 if exc is None else error_code(exc),
            "error_message": None if exc is None else error_message(exc),
            "resource_type": resource.resource_type, "resource_name": resource.resource_name,
            **extra}
