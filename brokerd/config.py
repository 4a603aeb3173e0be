"""Broker-level settings, with Kafka's names and (demo-friendly where noted) defaults.

As in Kafka, a setting takes its value from the first level that sets it: a dynamic config
of this broker, the cluster-wide dynamic default (both only for the dynamically updatable
configs of brokerd.dynamic_config, altered through the admin API), the static value given
to `brokerd -o`, and last the default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from brokerd import dynamic_config
from brokerd.storage.log_config import INT32_MAX, INT64_MAX, _integer


def _boolean(value: str) -> bool:
    return value.lower() == "true"


def _pem_only(value: str) -> str:
    if value.upper() != "PEM":
        raise ValueError("only PEM key and trust stores are supported")
    return value.upper()


def _client_auth(value: str) -> str:
    if value.lower() not in ("none", "requested", "required"):
        raise ValueError("expected none, requested or required")
    return value.lower()


def _share_auto_offset_reset(value: str) -> str:
    if value.lower() not in ("latest", "earliest"):
        raise ValueError("expected latest or earliest")
    return value.lower()


# name -> (default, parser). Values arrive as strings from `brokerd -o name=value`.
BROKER_DEFAULTS: dict[str, tuple[str, Callable[[str], object]]] = {
    "num.partitions": ("1", int),
    "default.replication.factor": ("1", int),
    "auto.create.topics.enable": ("true", _boolean),
    "socket.request.max.bytes": (str(100 * 1024 * 1024), int),
    # Kafka checks every 5 minutes; a local cluster shows retention within seconds.
    "log.retention.check.interval.ms": ("5000", int),
    "log.flush.scheduler.interval.ms": ("1000", int),
    # Kafka's cleaner threads wait 15 s between passes; compaction shows within seconds here.
    "log.cleaner.backoff.ms": ("2000", int),
    # Kafka: 9 s and 30 s. Shorter, so a class sees a paused broker leave within seconds.
    "broker.session.timeout.ms": ("3000", int),
    "replica.lag.time.max.ms": ("5000", int),
    "replica.high.watermark.checkpoint.interval.ms": ("5000", int),
    "auto.leader.rebalance.enable": ("true", _boolean),
    # How often the controller looks for brokers leading too few of the partitions they are the
    # preferred (first) replica of, and the share led elsewhere above which it moves them back
    # (with auto.leader.rebalance.enable). Kafka's defaults and checks: an interval of at least
    # 1 s, any INT percentage.
    "leader.imbalance.check.interval.seconds": ("300", _integer(1, INT64_MAX)),
    "leader.imbalance.per.broker.percentage": ("10", _integer(-INT32_MAX - 1, INT32_MAX)),
    "controlled.shutdown.timeout.ms": ("5000", int),
    # Kafka: 50 partitions and a 3 s initial delay; lighter and quicker for one machine.
    "offsets.topic.num.partitions": ("10", int),
    "offsets.topic.replication.factor": ("3", int),
    "group.initial.rebalance.delay.ms": ("300", int),
    "offsets.retention.minutes": ("10080", int),
    "offsets.retention.check.interval.ms": ("600000", int),
    "offset.metadata.max.bytes": ("4096", int),
    # Kafka: 50 partitions and a check every 10 s; a timed-out transaction is aborted within
    # about a second here. min.isr is capped by the replication factor on small clusters.
    "transaction.state.log.num.partitions": ("10", int),
    "transaction.state.log.replication.factor": ("3", int),
    "transaction.state.log.min.isr": ("2", int),
    "transaction.max.timeout.ms": ("900000", int),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("1000", int),
    # Incremental fetch sessions (KIP-227): how many a broker keeps, and how long one must sit
    # unused (or have existed) before a new session may push it out. Kafka's defaults.
    "max.incremental.fetch.session.cache.slots": ("1000", int),
    "min.incremental.fetch.session.eviction.ms": ("120000", int),
    # KIP-578's limit: replicas one broker may host. Sized for a 2-core laptop (see
    # docs/performance.md); Kafka itself has no limit.
    "max.broker.partitions": ("10000", int),
    # Security (docs/security.md). Empty `listeners` means PLAINTEXT on --host and --port.
    "listeners": ("", str),
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        str,
    ),
    "inter.broker.listener.name": ("", str),  # empty: the first listener
    # Kafka defaults to GSSAPI (Kerberos), which brokerd does not offer.
    "sasl.enabled.mechanisms": ("SCRAM-SHA-256,SCRAM-SHA-512,PLAIN", str),
    "sasl.mechanism.inter.broker.protocol": ("SCRAM-SHA-512", str),
    "sasl.server.max.receive.size": ("524288", int),
    "connections.max.reauth.ms": ("0", int),
    # Only PEM files (Kafka's ssl.keystore.type=PEM); Kafka defaults to JKS.
    "ssl.keystore.type": ("PEM", _pem_only),
    "ssl.keystore.location": ("", str),
    "ssl.key.password": ("", str),
    "ssl.truststore.type": ("PEM", _pem_only),
    "ssl.truststore.location": ("", str),
    "ssl.client.auth": ("none", _client_auth),
    "authorizer.class.name": ("", str),
    "super.users": ("", str),
    "allow.everyone.if.no.acl.found": ("false", _boolean),
    # KIP-848 consumer groups and KIP-932 share groups: Kafka's names, defaults and bounds.
    # A group's own configs (consumer.session.timeout.ms, ...) must stay within the bounds.
    "group.consumer.session.timeout.ms": ("45000", _integer(1, INT32_MAX)),
    "group.consumer.min.session.timeout.ms": ("45000", _integer(1, INT32_MAX)),
    "group.consumer.max.session.timeout.ms": ("60000", _integer(1, INT32_MAX)),
    "group.consumer.heartbeat.interval.ms": ("5000", _integer(1, INT32_MAX)),
    "group.consumer.min.heartbeat.interval.ms": ("5000", _integer(1, INT32_MAX)),
    "group.consumer.max.heartbeat.interval.ms": ("15000", _integer(1, INT32_MAX)),
    "group.consumer.max.size": (str(INT32_MAX), _integer(1, INT32_MAX)),
    "group.consumer.assignors": ("uniform,range", str),  # the first is the default
    "group.share.session.timeout.ms": ("45000", _integer(1, INT32_MAX)),
    "group.share.min.session.timeout.ms": ("45000", _integer(1, INT32_MAX)),
    "group.share.max.session.timeout.ms": ("60000", _integer(1, INT32_MAX)),
    "group.share.heartbeat.interval.ms": ("5000", _integer(1, INT32_MAX)),
    "group.share.min.heartbeat.interval.ms": ("5000", _integer(1, INT32_MAX)),
    "group.share.max.heartbeat.interval.ms": ("15000", _integer(1, INT32_MAX)),
    "group.share.record.lock.duration.ms": ("30000", _integer(1000, INT32_MAX)),
    "group.share.min.record.lock.duration.ms": ("15000", _integer(1000, INT32_MAX)),
    "group.share.max.record.lock.duration.ms": ("60000", _integer(1000, INT32_MAX)),
    "group.share.delivery.count.limit": ("5", _integer(2, 10)),
    "group.share.min.delivery.count.limit": ("2", _integer(2, 10)),
    "group.share.max.delivery.count.limit": ("10", _integer(2, 10)),
    # KIP-932's share partitions: members per share group, records in flight per share
    # partition, share sessions per broker (Kafka's defaults), and __share_group_state, where
    # share partitions persist their state (Kafka: 50 partitions; lighter here, as for
    # __consumer_offsets).
    "group.share.max.size": ("200", _integer(1, 1000)),
    "group.share.partition.max.record.locks": ("2000", _integer(100, 10000)),
    "group.share.max.share.sessions": ("2000", _integer(1, INT32_MAX)),
    # where a share group starts reading a partition it never read (a group's own
    # share.auto.offset.reset comes first); a broker-wide default here, for local clusters
    "share.auto.offset.reset": ("latest", _share_auto_offset_reset),
    "share.coordinator.state.topic.num.partitions": ("10", _integer(1, INT32_MAX)),
    "share.coordinator.state.topic.replication.factor": ("3", _integer(1, 32767)),
    "share.coordinator.state.topic.min.isr": ("2", _integer(1, 32767)),
}


# DescribeConfigs' config sources of the broker levels, highest precedence first
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5


class ConfigValue(NamedTuple):
    """A config's value at one level (Kafka's DescribeConfigs synonym)."""

    name: str
    value: str | None
    source: int


def _default(name: str) -> str | None:
    """brokerd's own default where it has one (some are demo-friendly), else Kafka's."""
    if name in BROKER_DEFAULTS:
        return BROKER_DEFAULTS[name][0]
    return dynamic_config.known_key(name).default


def _parse(name: str, value: str | None):
    if name not in BROKER_DEFAULTS and name not in dynamic_config.DYNAMIC_CONFIGS:
        raise ValueError(f"unknown broker config {name!r}")
    parse = BROKER_DEFAULTS[name][1] if name in BROKER_DEFAULTS else dynamic_config.known_key(name).parse
    try:
        return None if value is None else parse(value)
    except ValueError as exc:
        raise ValueError(f"invalid value {value!r} for broker config {name!r}") from exc


@dataclass
class BrokerConfig:
    broker_id: int
    cluster_dir: Path
    port: int
    host: str = "127.0.0.1"
    overrides: dict[str, str] = field(default_factory=dict)  # static: `brokerd -o`
    dynamic: dict[str, str] = field(default_factory=dict)  # this broker's dynamic configs
    dynamic_default: dict[str, str] = field(default_factory=dict)  # the cluster-wide ones

    def __post_init__(self):
        for name, value in self.overrides.items():
            _parse(name, value)

    def get(self, name: str):
        """A broker setting, typed, from the first level that sets it."""
        return _parse(name, self.synonyms(name)[0].value)

    def synonyms(self, name: str) -> list[ConfigValue]:
        """Every level that gives ``name`` a value, highest precedence first, ending with the
        default: the first is the value in effect, the rest are what DescribeConfigs lists as
        its synonyms."""
        levels = (
            (self.dynamic, SOURCE_DYNAMIC_BROKER),
            (self.dynamic_default, SOURCE_DYNAMIC_DEFAULT_BROKER),
            (self.overrides, SOURCE_STATIC_BROKER),
        )
        return [ConfigValue(name, level[name], source) for level, source in levels if name in level] + [
            ConfigValue(name, _default(name), SOURCE_DEFAULT)
        ]

    def names(self) -> list[str]:
        """Every setting this broker knows, with the listener-prefixed ones set dynamically."""
        return sorted(
            BROKER_DEFAULTS.keys()
            | dynamic_config.DYNAMIC_CONFIGS.keys()
            | self.dynamic.keys()
            | self.dynamic_default.keys()
        )

    def log_defaults(self) -> dict[str, str]:
        """Topic configs whose broker-level default is set (statically or dynamically), by
        topic config name: what a topic without its own override uses."""
        effective = {
            topic: self.synonyms(name)[0] for topic, name in dynamic_config.TOPIC_CONFIG_SYNONYMS.items()
        }
        # a level's value is never None, only a default's may be
        return {
            topic: value.value
            for topic, value in effective.items()
            if value.source != SOURCE_DEFAULT and value.value is not None
        }
