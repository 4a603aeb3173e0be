"""Kafka's dynamic broker configs (KIP-226): the broker configs that may change while brokers run.

Kafka keeps them per broker (/config/brokers/<id>, AdminClient resource name "<id>") and as
cluster-wide defaults (/config/brokers/<default>, resource name ""); brokerd keeps both in the
state directory. The names and validation rules are those of Kafka's DynamicBrokerConfig:
only ``DYNAMIC_CONFIGS`` may be set; security and listener configs only per broker, and the
SSL keystore/truststore ones only behind a listener prefix (listener.name.<listener>.<config>).

Each topic config's broker-level default (``TOPIC_CONFIG_SYNONYMS``, Kafka's
ServerTopicConfigSynonyms) is dynamic, so a changed log.retention.ms reaches every topic
without its own retention.ms. Most of the other names configure things brokerd does not have
(thread pools, SSL, SASL, quotas, tiered storage): they are validated, stored and described,
as Kafka does, and have no effect.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from brokerd.storage.log_config import (
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    KEYS_BY_NAME,
    NotANumber,
    _boolean,
    _integer,
    _number,
)

# topic config -> the broker config that is its default (the first of Kafka's synonyms)
TOPIC_CONFIG_SYNONYMS: dict[str, str] = {
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "segment.index.bytes": "log.index.size.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "min.insync.replicas": "min.insync.replicas",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "cleanup.policy": "log.cleanup.policy",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.downconversion.enable": "log.message.downconversion.enable",
    "preallocate": "log.preallocate",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "local.retention.ms": "log.local.retention.ms",
    "local.retention.bytes": "log.local.retention.bytes",
}

_PARSERS: dict[str, Callable[[str], object]] = {
    "SHORT": _integer(-(2**15), 2**15 - 1),
    "INT": _integer(-INT32_MAX - 1, INT32_MAX),
    "LONG": _integer(INT64_MIN, INT64_MAX),
    "DOUBLE": lambda text: _number(text, float),
    "BOOLEAN": _boolean,
}


class DynamicKey(NamedTuple):
    """A dynamically updatable broker config: Kafka's ConfigDef type and default (None: null)."""

    name: str
    config_type: str
    default: str | None
    parse: Callable[[str], object]


def _key(name: str, config_type: str, default: str | None) -> DynamicKey:
    return DynamicKey(name, config_type, default, _PARSERS.get(config_type, str))


def _keys(config_type: str, defaults: Mapping[str, str | None]) -> list[DynamicKey]:
    return [_key(name, config_type, default) for name, default in defaults.items()]


_LOG_DEFAULTS = [
    DynamicKey(
        broker_name,
        KEYS_BY_NAME[topic].config_type,
        KEYS_BY_NAME[topic].default,
        KEYS_BY_NAME[topic].parse,
    )
    for topic, broker_name in TOPIC_CONFIG_SYNONYMS.items()
]

# thread pools, the log cleaner, connection limits, metrics, producer state, tiered storage
_BROKER_WIDE = [
    *_keys(
        "INT",
        {
            "num.io.threads": "8",
            "num.replica.fetchers": "1",
            "num.recovery.threads.per.data.dir": "1",
            "background.threads": "10",
            "num.network.threads": "3",
            "log.cleaner.threads": "1",
            "log.cleaner.io.buffer.size": "524288",
            "max.connections": str(INT32_MAX),
            "max.connections.per.ip": str(INT32_MAX),
            "max.connection.creation.rate": str(INT32_MAX),
            "producer.id.expiration.ms": "86400000",
            "remote.fetch.max.wait.ms": "500",
        },
    ),
    *_keys(
        "LONG",
        {
            "log.cleaner.backoff.ms": "15000",
            "log.cleaner.dedupe.buffer.size": str(128 << 20),
            "leader.replication.throttled.rate": str(INT64_MAX),
            "follower.replication.throttled.rate": str(INT64_MAX),
            "replica.alter.log.dirs.io.max.bytes.per.second": str(INT64_MAX),
            "remote.log.index.file.cache.total.size.bytes": str(1 << 30),
            "remote.log.manager.copy.max.bytes.per.second": str(INT64_MAX),
            "remote.log.manager.fetch.max.bytes.per.second": str(INT64_MAX),
            "remote.list.offsets.request.timeout.ms": "30000",
        },
    ),
    *_keys(
        "DOUBLE",
        {
            "log.cleaner.io.buffer.load.factor": "0.9",
            "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
        },
    ),
    *_keys("STRING", {"max.connections.per.ip.overrides": ""}),
    *_keys("LIST", {"metric.reporters": ""}),
    *_keys("BOOLEAN", {"transaction.partition.verification.enable": "true"}),
]

# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: settable only behind a listener prefix
_SSL_STORES = [
    *_keys(
        "STRING",
        {
            "ssl.keystore.type": "JKS",
            "ssl.keystore.location": None,
            "ssl.truststore.type": "JKS",
            "ssl.truststore.location": None,
        },
    ),
    *_keys(
        "PASSWORD",
        {
            "ssl.keystore.password": None,
            "ssl.key.password": None,
            "ssl.truststore.password": None,
            "ssl.keystore.certificate.chain": None,
            "ssl.keystore.key": None,
            "ssl.truststore.certificates": None,
        },
    ),
]

# Kafka's DynamicListenerConfig: listeners, SSL and SASL, settable per broker only
_LISTENER = [
    *_keys(
        "STRING",
        {
            "listeners": "PLAINTEXT://:9092",
            "advertised.listeners": None,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL",
            "ssl.protocol": "TLSv1.3",
            "ssl.provider": None,
            "ssl.keymanager.algorithm": "SunX509",
            "ssl.trustmanager.algorithm": "PKIX",
            "ssl.endpoint.identification.algorithm": "https",
            "ssl.secure.random.implementation": None,
            "ssl.client.auth": "none",
            "sasl.mechanism.inter.broker.protocol": "GSSAPI",
            "sasl.kerberos.service.name": None,
            "sasl.kerberos.kinit.cmd": "/usr/bin/kinit",
        },
    ),
    *_keys(
        "CLASS",
        {
            "principal.builder.class": (
                "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
            ),
            "ssl.engine.factory.class": None,
        },
    ),
    *_keys(
        "LIST",
        {
            "ssl.cipher.suites": "",
            "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
            "sasl.enabled.mechanisms": "GSSAPI",
            "sasl.kerberos.principal.to.local.rules": "DEFAULT",
        },
    ),
    *_keys("PASSWORD", {"sasl.jaas.config": None}),
    *_keys(
        "DOUBLE",
        {
            "sasl.kerberos.ticket.renew.window.factor": "0.8",
            "sasl.kerberos.ticket.renew.jitter": "0.05",
            "sasl.login.refresh.window.factor": "0.8",
            "sasl.login.refresh.window.jitter": "0.05",
        },
    ),
    *_keys("LONG", {"sasl.kerberos.min.time.before.relogin": "60000"}),
    *_keys(
        "SHORT", {"sasl.login.refresh.min.period.seconds": "60", "sasl.login.refresh.buffer.seconds": "300"}
    ),
]

DYNAMIC_CONFIGS: dict[str, DynamicKey] = {
    key.name: key for key in (*_LOG_DEFAULTS, *_BROKER_WIDE, *_SSL_STORES, *_LISTENER)
}
_LISTENER_ONLY = frozenset(key.name for key in _SSL_STORES)
# listener configs Kafka lets the whole cluster share; the rest of a listener's are per broker
_CLUSTER_LEVEL_LISTENER = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
_PER_BROKER = frozenset(key.name for key in (*_SSL_STORES, *_LISTENER))
_LISTENER_PREFIX = re.compile(r"listener\.name\.[^.]*\.(.*)")
# configs of a SASL mechanism, which a listener names as listener.name.<l>.<mechanism>.<config>
_MECHANISM_CONFIGS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)


def base_name(name: str) -> str:
    """The config a listener-prefixed name overrides (``name`` itself when not prefixed)."""
    match = _LISTENER_PREFIX.fullmatch(name)
    if match is None:
        return name
    return next((m for m in _MECHANISM_CONFIGS if match.group(1).endswith(m)), match.group(1))


def key(name: str) -> DynamicKey | None:
    """The dynamic config ``name`` sets, listener prefix or not; None when it is not dynamic."""
    return DYNAMIC_CONFIGS.get(base_name(name))


def known_key(name: str) -> DynamicKey:
    """The dynamic config ``name`` sets, for a name already known to be dynamic."""
    found = key(name)
    if found is None:
        raise KeyError(f"{name!r} is not a dynamically updatable broker config")
    return found


def is_sensitive(name: str) -> bool:
    """Passwords are stored but never described (Kafka answers a null value)."""
    found = key(name)
    return found is not None and found.config_type == "PASSWORD"


def validate(configs: Mapping[str, str | None], per_broker: bool) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs over a broker's (or the cluster default's)
    whole new set of dynamic configs; INVALID_REQUEST with Kafka's messages, as a KRaft broker
    answers. Kafka would also take unknown names as custom configs for its plugins; brokerd
    has no plugins, so it refuses them with the static ones."""
    _refuse((name for name in configs if key(name) is None), "Cannot update these configs dynamically")
    _refuse(
        (name for name in configs if name in _LISTENER_ONLY),
        "These security configs can be dynamically updated only per-listener using the listener prefix",
    )
    for name, value in configs.items():
        _check_value(name, value)
    if not per_broker:
        _refuse(
            (name for name in configs if _is_per_broker(name)),
            "Cannot update these configs at default cluster level, broker id must be specified",
        )


def _is_per_broker(name: str) -> bool:
    if name.startswith("listener.name."):
        return base_name(name) not in _CLUSTER_LEVEL_LISTENER
    return name in _PER_BROKER


def _invalid_request(message: str) -> Exception:
    """kafka-python's INVALID_REQUEST error, imported only when a value is refused: kctl reads
    this table for every command that shows brokers, and kafka-python costs 0.2 s to import."""
    from kafka.errors import InvalidRequestError

    error: Exception = InvalidRequestError(message)
    return error


def _check_value(name: str, value: str | None) -> None:
    if value is None:
        raise _invalid_request(f"Null value not supported for : {name}")
    key = known_key(name)  # validate refused the names that are not dynamic
    try:
        key.parse(value)
        return
    except NotANumber:
        reason = f"Not a number of type {key.config_type}"
    except ValueError as error:
        reason = str(error)
    raise _invalid_request(f"Invalid value {value} for configuration {name}: {reason}")


def _refuse(names: Iterable[str], message: str) -> None:
    """Kafka lists the offending names as a Scala set: ``Set(a, b)``."""
    offending = sorted(set(names))
    if offending:
        raise _invalid_request(f"{message}: Set({', '.join(offending)})")
