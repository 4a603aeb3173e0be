"""The worker's own settings, with Kafka Connect's worker config names (DistributedConfig):
where connector configs and statuses are kept, and the converters a connector without its own
uses. Connect requires most of them; this worker has the defaults of Kafka's
connect-distributed.properties instead, so that it starts with none."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULTS = {
    "group.id": "connect-cluster",
    "config.storage.topic": "connect-configs",
    "status.storage.topic": "connect-status",
    "status.storage.partitions": "5",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "key.converter.schemas.enable": "true",
    "value.converter.schemas.enable": "true",
}


@dataclass(frozen=True)
class WorkerConfig:
    settings: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULTS))

    @classmethod
    def of(cls, given: Mapping[str, str]) -> WorkerConfig:
        return cls({**DEFAULTS, **given})

    @property
    def config_topic(self) -> str:
        return self.settings["config.storage.topic"]

    @property
    def status_topic(self) -> str:
        return self.settings["status.storage.topic"]

    @property
    def status_partitions(self) -> int:
        return int(self.settings["status.storage.partitions"])

    def replication_factor(self, prop: str, brokers: int) -> int:
        """`config.storage.replication.factor` and the like; Connect's 3, or all the brokers
        of a smaller cluster (-1, the broker's default, also accepted)."""
        return capped_replication(int(self.settings.get(prop, "3")), brokers)


def capped_replication(given: int, brokers: int) -> int:
    """A topic's replication factor as Connect's worker creates its topics on a cluster of
    `brokers`: at most all of them, and -1 (the broker's default) as Connect's 3."""
    return min(given, brokers) if given > 0 else min(3, brokers)
