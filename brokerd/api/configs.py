"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, brokers and groups.

Broker resources are Kafka's dynamic broker configs (brokerd.dynamic_config): resource name
"<id>" for one broker, which must be the broker asked (clients send a broker's configs to that
broker), and "" for the cluster-wide defaults.

As in Kafka, describing a topic's configs needs DESCRIBE_CONFIGS on the topic (else
TOPIC_AUTHORIZATION_FAILED), a broker's DESCRIBE_CONFIGS on the cluster (else
CLUSTER_AUTHORIZATION_FAILED); altering them ALTER_CONFIGS likewise. A group's configs
(KIP-848's consumer.*, KIP-932's share.*; brokerd.group_configs) need the operation on the
group (else GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import (
    InvalidConfigurationError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)

from brokerd import dynamic_config
from brokerd.api.authorization import require
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.config import SOURCE_DEFAULT, SOURCE_DYNAMIC_DEFAULT_BROKER, BrokerConfig, ConfigValue
from brokerd.group_configs import GROUP_CONFIG_NAMES, InvalidGroupConfig
from brokerd.ports.services import BrokerServices, ConfigStore
from brokerd.security.acl import CLUSTER_NAME
from brokerd.security.principal import Session
from brokerd.security.standard_authorizer import StandardAuthorizer
from brokerd.storage.log_config import KEYS_BY_NAME, LogConfig

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
GROUP = 32
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_GROUP = 8  # Kafka's GROUP_CONFIG source
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


async def handle_describe(services: BrokerServices, request: Request) -> dict:
    include_synonyms = bool(getattr(request.body, "include_synonyms", False))
    results = []
    for resource in request.body.resources:
        try:
            _authorize(services.security.authorizer, request.session, ACLOperation.DESCRIBE_CONFIGS, resource)
            entries = [
                _entry(name, values, read_only, include_synonyms)
                for name, values, read_only in _describe(services, resource)
            ]
            keys = resource.configuration_keys
            configs = [e for e in entries if keys is None or e["name"] in keys]
            results.append(_result(resource, None, configs=configs))
        except Exception as exc:
            results.append(_result(resource, exc, configs=[]))
    return {"throttle_time_ms": 0, "results": results}


def _authorize(authorizer: StandardAuthorizer, session: Session, operation: ACLOperation, resource) -> None:
    """A topic's configs are the topic's to guard, a broker's the cluster's (Kafka's rule);
    other resource types are refused further on."""
    if resource.resource_type == TOPIC:
        require(authorizer, session, operation, ResourceType.TOPIC, resource.resource_name)
    elif resource.resource_type in (BROKER, BROKER_LOGGER):
        require(authorizer, session, operation, ResourceType.CLUSTER, CLUSTER_NAME)
    elif resource.resource_type == GROUP:
        require(authorizer, session, operation, ResourceType.GROUP, resource.resource_name)


def _describe(services: BrokerServices, resource) -> list[tuple[str, list[ConfigValue], bool]]:
    """Each config's name, its values by precedence (the first is in effect; a topic config's
    broker-level ones carry the broker config's name) and its read-only flag."""
    if resource.resource_type == TOPIC:
        topic = services.metadata.topics.get(resource.resource_name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {resource.resource_name!r} does not exist")
        return [(name, _topic_values(services.config, topic.configs, name), False) for name in KEYS_BY_NAME]
    if resource.resource_type == GROUP:
        own = services.groups.configs.own(resource.resource_name)
        return [
            (
                name,
                [ConfigValue(name, own[name], SOURCE_GROUP)]
                if name in own
                else [ConfigValue(name, services.groups.configs.default(name), SOURCE_DEFAULT)],
                False,
            )
            for name in GROUP_CONFIG_NAMES
        ]
    if resource.resource_type != BROKER:
        raise InvalidRequestError(f"resource type {resource.resource_type} is not supported")
    if not resource.resource_name:  # the cluster-wide defaults: only what is set there
        return [
            (name, [ConfigValue(name, value, SOURCE_DYNAMIC_DEFAULT_BROKER)], False)
            for name, value in sorted(services.config.dynamic_default.items())
        ]
    _own_broker_id(
        services.broker_id, resource.resource_name, "Broker id", f"{services.broker_id} or empty string"
    )
    return [
        (name, services.config.synonyms(name), dynamic_config.key(name) is None)
        for name in services.config.names()
    ]


def _topic_values(config: BrokerConfig, configs: Mapping[str, str], name: str) -> list[ConfigValue]:
    """A topic config's own override, then its broker-level default's levels (Kafka lists the
    broker config under its broker name, e.g. log.retention.ms for retention.ms). The first is
    in effect: the value the topic's logs use, as they take BrokerConfig.log_defaults under the
    topic's own configs. Some configs have no broker-level default (the throttled replica
    lists, the tiered storage switches, message.format.version): theirs is the topic config's
    own."""
    own = [ConfigValue(name, configs[name], SOURCE_DYNAMIC_TOPIC)] if name in configs else []
    broker_name = dynamic_config.TOPIC_CONFIG_SYNONYMS.get(name)
    if broker_name is None:
        return own or [ConfigValue(name, KEYS_BY_NAME[name].default, SOURCE_DEFAULT)]
    return own + config.synonyms(broker_name)


def _entry(name: str, values: list[ConfigValue], read_only: bool, include_synonyms: bool) -> dict:
    _, value, source = values[0]
    sensitive = dynamic_config.is_sensitive(name)
    synonyms = (
        [{"name": v.name, "value": None if sensitive else v.value, "source": v.source} for v in values]
        if include_synonyms
        else []
    )
    return {
        "name": name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "is_default": source == SOURCE_DEFAULT,
        "config_source": source,
        "is_sensitive": sensitive,
        "synonyms": synonyms,
    }


def _own_broker_id(own_id: int, name: str, what: str, expected: str) -> int:
    """A broker answers for its own configs only (Kafka's rule, with its messages)."""
    try:
        broker_id = int(name)
    except ValueError:
        raise InvalidRequestError(f"{what} must be an integer, but it is: {name}") from None
    if broker_id != own_id:
        raise InvalidRequestError(f"Unexpected broker id, expected {expected}, but received {name}")
    return broker_id


async def handle_alter(services: BrokerServices, request: Request) -> dict:
    """Legacy AlterConfigs replaces a resource's whole set of configs."""

    def replace(current: dict, configs, key_of) -> dict:
        return {c.name: c.value for c in configs}

    return _alter_all(services, request, replace)


async def handle_incremental_alter(services: BrokerServices, request: Request) -> dict:
    def apply(current: dict, configs, key_of) -> dict:
        """Kafka's four operations; ``key_of`` gives a config's type and default by name."""
        updated = dict(current)
        for c in configs:
            if c.config_operation == OP_SET:
                updated[c.name] = c.value
            elif c.config_operation == OP_DELETE:
                updated.pop(c.name, None)
            elif c.config_operation in (OP_APPEND, OP_SUBTRACT):
                updated[c.name] = _edit_list(current, key_of(c.name), c, c.config_operation)
            else:
                raise InvalidRequestError(f"Unknown operations type {c.config_operation}")
        return updated

    return _alter_all(services, request, apply)


def _edit_list(current: dict, key, config, operation: int) -> str:
    """APPEND adds the comma-separated ``value`` items missing from a LIST config, SUBTRACT
    removes them; the current value, or else the default, is the starting point (Kafka's
    rule). Other types refuse both, as in Kafka."""
    if key is None or key.config_type != "LIST":
        verb = "append" if operation == OP_APPEND else "subtract"
        raise InvalidConfigurationError(f"Config value {verb} is not allowed for config key: {config.name}")
    items = [v.strip() for v in (current.get(config.name, key.default) or "").split(",") if v.strip()]
    given = [v.strip() for v in (config.value or "").split(",") if v.strip()]
    if operation == OP_APPEND:
        return ",".join(items + [v for v in given if v not in items])
    return ",".join(v for v in items if v not in given)


def _alter_all(services: BrokerServices, request: Request, change: Callable) -> dict:
    body = request.body
    responses = []
    for resource in body.resources:
        try:
            _authorize(services.security.authorizer, request.session, ACLOperation.ALTER_CONFIGS, resource)
            names = [c.name for c in resource.configs]
            if len(set(names)) != len(names):
                raise InvalidRequestError("Error due to duplicate config keys")
            if resource.resource_type == TOPIC:
                _alter_topic(services.config_store, resource, change, body.validate_only)
            elif resource.resource_type == BROKER:
                _alter_broker(services, resource, change, body.validate_only)
            elif resource.resource_type == GROUP:
                _alter_group(services, resource, change, body.validate_only)
            else:
                raise InvalidRequestError(
                    "AlterConfigs is only supported for topics, brokers and groups, "
                    f"but resource type is {resource.resource_type}"
                )
            responses.append(_result(resource, None))
        except Exception as exc:
            responses.append(_result(resource, exc))
    services.metadata.apply_metadata_delta()
    return {"throttle_time_ms": 0, "responses": responses}


def _alter_topic(state: ConfigStore, resource, change: Callable, validate_only: bool) -> None:
    """A change is written as ConfigRecords of what it changed (none when it changes
    nothing); a validate-only one reads the topic without the write lock and writes nothing."""

    def altered(topics: Mapping) -> tuple:
        topic = topics.get(resource.resource_name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {resource.resource_name!r} does not exist")
        updated = change(topic.configs, resource.configs, KEYS_BY_NAME.get)
        LogConfig.from_configs(updated)
        return topic, updated

    if validate_only:
        altered(state.topics())
        return
    with state.update_topic_configs() as topics:
        topic, updated = altered(topics)
        topics[topic.name] = dataclasses.replace(topic, configs=updated)


def _alter_broker(services: BrokerServices, resource, change: Callable, validate_only: bool) -> None:
    """Change one broker's dynamic configs (resource name "<id>") or the cluster-wide ones
    (""); every broker takes the change up when it next polls the metadata. As for topics, a
    validate-only change reads them without the write lock and writes nothing."""
    broker_id = (
        _own_broker_id(services.broker_id, resource.resource_name, "Node id", str(services.broker_id))
        if resource.resource_name
        else None
    )

    def altered(configs: dict[str, str]) -> dict[str, str]:
        updated = change(configs, resource.configs, dynamic_config.key)
        dynamic_config.validate(updated, per_broker=broker_id is not None)
        return updated

    if validate_only:
        altered(services.config_store.dynamic_broker_configs(broker_id))
        return
    with services.config_store.update_dynamic_broker_configs(broker_id) as configs:
        updated = altered(configs)
        configs.clear()
        configs.update(updated)


def _alter_group(services: BrokerServices, resource, change: Callable, validate_only: bool) -> None:
    """A group's configs, checked against the broker's bounds (Kafka's GroupConfig.validate)
    and written as ConfigRecords; the coordinators read them at each heartbeat."""
    if not resource.resource_name:
        raise InvalidRequestError("Group name must not be empty")

    def altered(configs: Mapping[str, str]) -> dict[str, str]:
        updated = change(dict(configs), resource.configs, lambda name: None)
        try:
            services.groups.configs.validate(updated)
        except InvalidGroupConfig as exc:
            raise InvalidConfigurationError(str(exc)) from None
        return updated

    if validate_only:
        altered(services.config_store.group_configs(resource.resource_name))
        return
    with services.config_store.update_group_configs(resource.resource_name) as configs:
        updated = altered(configs)
        configs.clear()
        configs.update(updated)


def _result(resource, exc: Exception | None, **extra) -> dict:
    return {
        "error_code": 0 if exc is None else error_code(exc),
        "error_message": None if exc is None else error_message(exc),
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
        **extra,
    }
