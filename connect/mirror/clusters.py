"""What the mirror connectors ask of either cluster over the Kafka protocol: topics with their
partition counts and configs, creating and growing remote topics and MM2's internal topics,
and consumer groups' committed offsets and state."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

TIMEOUT_S = 30.0
# MM2's DefaultConfigPropertyFilter: configs of a topic that stay the target's own
EXCLUDED_CONFIGS = (
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "unclean.leader.election.enable",
    "min.insync.replicas",
)
_ADMIN_ONLY = ("group.id", "isolation.level")
_IDLE = (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN)


class Cluster:
    def __init__(self, client: Mapping[str, str]) -> None:
        self.client = dict(client)
        self._admin = AdminClient({k: v for k, v in client.items() if k not in _ADMIN_ONLY})

    def topics(self) -> dict[str, int]:
        """Every topic and its partition count."""
        meta = self._admin.list_topics(timeout=TIMEOUT_S)
        return {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}

    def brokers(self) -> int:
        return len(self._admin.list_topics(timeout=TIMEOUT_S).brokers)

    def replication(self, wanted: int) -> int:
        """MM2's replication factor for a topic it creates, at most every broker there is
        (-1: the brokers' default)."""
        return min(wanted, self.brokers()) if wanted > 0 else -1

    def synced_configs(self, topic: str) -> dict[str, str]:
        """The configs set on the topic itself that MM2 copies to its remote topic."""
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        entries = self._admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result()
        return {
            name: entry.value
            for name, entry in entries.items()
            if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
            and name not in EXCLUDED_CONFIGS
            and entry.value is not None
        }

    def create(self, topic: str, partitions: int, replication: int, configs: Mapping[str, str]) -> None:
        """Create the topic; one that exists already (another worker, a retry) is no error."""
        new = NewTopic(topic, partitions, replication, config=dict(configs))
        _tolerating(
            self._admin.create_topics([new], request_timeout=TIMEOUT_S)[topic],
            KafkaError.TOPIC_ALREADY_EXISTS,
        )

    def grow(self, topic: str, partitions: int) -> None:
        future = self._admin.create_partitions([NewPartitions(topic, partitions)], request_timeout=TIMEOUT_S)
        _tolerating(future[topic], KafkaError.INVALID_PARTITIONS)

    def set_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        if not configs:
            return
        resource = ConfigResource(
            ConfigResource.Type.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
            ],
        )
        self._admin.incremental_alter_configs([resource], request_timeout=TIMEOUT_S)[resource].result()

    def internal_topic(self, topic: str, replication: int) -> None:
        """MM2's internal topics: one partition, compacted; created when missing."""
        if topic not in self.topics():
            self.create(topic, 1, self.replication(replication), {"cleanup.policy": "compact"})

    def groups(self) -> list[str]:
        listed = self._admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
        return sorted(g.group_id for g in listed.valid)

    def committed(self, group: str) -> dict[tuple[str, int], tuple[int, str]]:
        """(topic, partition) -> (offset, metadata) the group committed."""
        request = [ConsumerGroupTopicPartitions(group)]
        found = self._admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
        return {
            (tp.topic, tp.partition): (tp.offset, tp.metadata or "")
            for tp in found.topic_partitions
            if tp.offset >= 0
        }

    def idle(self, group: str) -> bool:
        """No active member: Empty, or not there at all (Dead)."""
        described = self._admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result()
        return described.state in _IDLE

    def commit(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        partitions = [KafkaPartition(t, p, o) for (t, p), o in offsets.items()]
        request = [ConsumerGroupTopicPartitions(group, partitions)]
        done = self._admin.alter_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
        failed = next((tp.error for tp in done.topic_partitions if tp.error is not None), None)
        if failed is not None:
            raise KafkaException(failed)


def _tolerating(future: Future, code: int) -> None:
    try:
        future.result()
    except KafkaException as exc:
        if exc.args[0].code() != code:
            raise
