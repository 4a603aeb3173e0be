"""Broker-level settings, with Kafka's names and (demo-friendly where noted) defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# name -> (default, parser). Values arrive as strings from `brokerd -o name=value`.
BROKER_DEFAULTS: dict[str, tuple[str, type]] = {
    "num.partitions": ("1", int),
    "default.replication.factor": ("1", int),
    "auto.create.topics.enable": ("true", lambda v: v.lower() == "true"),
    "socket.request.max.bytes": (str(100 * 1024 * 1024), int),
    # Kafka checks every 5 minutes; a local cluster shows retention within seconds.
    "log.retention.check.interval.ms": ("5000", int),
    "log.flush.scheduler.interval.ms": ("1000", int),
    # Kafka's cleaner threads wait 15 s between passes; compaction shows within seconds here.
    "log.cleaner.backoff.ms": ("2000", int),
    # Kafka: 9 s and 30 s. Shorter, so a class sees a paused broker leave within seconds.
    "broker.session.timeout.ms": ("3000", int),
    "replica.lag.time.max.ms": ("5000", int),
    "auto.leader.rebalance.enable": ("true", lambda v: v.lower() == "true"),
    "controlled.shutdown.timeout.ms": ("5000", int),
    # Kafka: 50 partitions and a 3 s initial delay; lighter and quicker for one machine.
    "offsets.topic.num.partitions": ("10", int),
    "offsets.topic.replication.factor": ("3", int),
    "group.initial.rebalance.delay.ms": ("300", int),
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
}


def _parse(name: str, value: str):
    if name not in BROKER_DEFAULTS:
        raise ValueError(f"unknown broker config {name!r}")
    try:
        return BROKER_DEFAULTS[name][1](value)
    except ValueError as exc:
        raise ValueError(f"invalid value {value!r} for broker config {name!r}") from exc


@dataclass
class BrokerConfig:
    broker_id: int
    cluster_dir: Path
    port: int
    host: str = "127.0.0.1"
    overrides: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        for name, value in self.overrides.items():
            _parse(name, value)

    def get(self, name: str):
        """A broker setting, typed: the override if given, else Kafka's default."""
        return _parse(name, self.overrides.get(name, BROKER_DEFAULTS[name][0]))

    def describe(self) -> list[tuple[str, str, bool]]:
        """(name, value, is_default) for every setting, as DescribeConfigs reports them."""
        return [(name, self.overrides.get(name, default), name not in self.overrides)
                for name, (default, _) in sorted(BROKER_DEFAULTS.items())]
