"""MM2's connector settings (MirrorConnectorConfig, MirrorSourceConfig, MirrorCheckpointConfig,
MirrorHeartbeatConfig) with their names and defaults, and what a connector's query needs of
them: each cluster's client settings, the naming policy, the filters and the intervals.

`source.cluster.bootstrap.servers` / `target.cluster.bootstrap.servers` name the clusters; a
side without one is the worker's own cluster. Other `source.cluster.*` / `target.cluster.*`
keys are client settings of that side (security.protocol, sasl.*), as in MM2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from connect.configdef import Check, ConfigKey, at_least, one_of
from connect.mirror import policy
from connect.mirror.policy import NameFilter, ReplicationPolicy

SOURCE_SIDE, TARGET_SIDE = "source", "target"


def _key(
    name: str, kind: str, default: str | None, doc: str, importance: str = "HIGH", check: Check | None = None
) -> ConfigKey:
    return ConfigKey(name, kind, doc, default=default, importance=importance, check=check)


def _seconds(name: str, default: str, doc: str) -> ConfigKey:
    return _key(name, "LONG", default, doc, importance="LOW", check=at_least(1))


def _flag(name: str, default: str, doc: str) -> ConfigKey:
    return _key(name, "BOOLEAN", default, doc, importance="LOW", check=one_of("true", "false"))


def _replication(topic: str) -> ConfigKey:
    """The replication factor of an internal topic: `offset-syncs`, `checkpoints`, `heartbeats`."""
    return _key(
        f"{topic}.topic.replication.factor", "SHORT", "3", f"Replication factor for {topic} topic.", "LOW"
    )


COMMON_KEYS = [
    _key("source.cluster.alias", "STRING", "source", "Alias of source cluster"),
    _key("target.cluster.alias", "STRING", "target", "Alias of target cluster. Used in metrics reporting."),
    _key(
        "source.cluster.bootstrap.servers",
        "LIST",
        None,
        "The source cluster's brokers; default: the worker's.",
    ),
    _key(
        "target.cluster.bootstrap.servers",
        "LIST",
        None,
        "The target cluster's brokers; default: the worker's.",
    ),
    _key(
        "replication.policy.class",
        "CLASS",
        policy.DEFAULT_POLICY,
        "Class which defines the remote topic naming convention.",
        importance="LOW",
        check=lambda v: None if v in policy.POLICIES else f"Class {v} could not be found.",
    ),
    _key(
        "replication.policy.separator",
        "STRING",
        ".",
        "Separator used in remote topic naming convention.",
        importance="LOW",
    ),
    _key(
        "offset-syncs.topic.location",
        "STRING",
        SOURCE_SIDE,
        "The location (which cluster) of the offset-syncs topic.",
        importance="LOW",
        check=one_of(SOURCE_SIDE, TARGET_SIDE),
    ),
]
_TOPIC_FILTER = [
    _key(
        "topics",
        "LIST",
        ".*",
        "Topics to replicate. Supports comma-separated topic names and regexes.",
        check=policy.bad_regex_list,
    ),
    _key(
        "topics.exclude",
        "LIST",
        policy.TOPICS_EXCLUDE,
        "List of topics and/or regexes that should not be replicated.",
        check=policy.bad_regex_list,
    ),
]
SOURCE_KEYS = (
    COMMON_KEYS
    + _TOPIC_FILTER
    + [
        _flag(
            "sync.topic.configs.enabled",
            "true",
            "Whether to periodically configure remote topics to match their corresponding upstream topics.",
        ),
        _seconds("sync.topic.configs.interval.seconds", "600", "Frequency of topic config sync."),
        _flag(
            "refresh.topics.enabled", "true", "Whether to periodically check for new topics and partitions."
        ),
        _seconds("refresh.topics.interval.seconds", "600", "Frequency of topic refresh."),
        _key(
            "replication.factor",
            "INT",
            "2",
            "Replication factor for newly created remote topics.",
            importance="LOW",
        ),
        _replication("offset-syncs"),
        _key(
            "offset.lag.max",
            "LONG",
            "100",
            "How out-of-sync a remote partition can be before it is resynced.",
            importance="LOW",
            check=at_least(0),
        ),
    ]
)
CHECKPOINT_KEYS = (
    COMMON_KEYS
    + _TOPIC_FILTER
    + [
        _key(
            "groups",
            "LIST",
            ".*",
            "Consumer groups to replicate. Supports comma-separated group IDs and regexes.",
            check=policy.bad_regex_list,
        ),
        _key(
            "groups.exclude",
            "LIST",
            policy.GROUPS_EXCLUDE,
            "List of consumer groups and/or regexes that should not be replicated.",
            check=policy.bad_regex_list,
        ),
        _flag("emit.checkpoints.enabled", "true", "Whether to replicate consumer offsets to target cluster."),
        _seconds("emit.checkpoints.interval.seconds", "60", "Frequency of checkpoints."),
        _flag(
            "sync.group.offsets.enabled",
            "false",
            "Whether to periodically write the translated offsets to __consumer_offsets topic in target "
            "cluster, as long as no active consumers in that group are connected to the target cluster",
        ),
        _seconds("sync.group.offsets.interval.seconds", "60", "Frequency of consumer group offset sync."),
        _seconds("refresh.groups.interval.seconds", "600", "Frequency of group refresh."),
        _replication("checkpoints"),
    ]
)
HEARTBEAT_KEYS = COMMON_KEYS + [
    _flag("emit.heartbeats.enabled", "true", "Whether to emit heartbeats to target cluster."),
    _seconds("emit.heartbeats.interval.seconds", "1", "Frequency of heartbeats."),
    _replication("heartbeats"),
]


@dataclass(frozen=True)
class MirrorSettings:
    """A mirror connector's config with MM2's defaults filled in, and the two clusters."""

    config: Mapping[str, str]
    source: dict[str, str]  # librdkafka settings of the source cluster
    target: dict[str, str]

    @classmethod
    def of(
        cls, config: Mapping[str, str], own_kafka: Mapping[str, str], keys: list[ConfigKey]
    ) -> MirrorSettings:
        """`own_kafka`: the worker's cluster as kctl's Spark options (`kafka.*`)."""
        full = {key.name: key.default for key in keys if key.default is not None} | dict(config)
        own = {k.removeprefix("kafka."): v for k, v in own_kafka.items() if k.startswith("kafka.")}
        return cls(full, _client(full, SOURCE_SIDE, own), _client(full, TARGET_SIDE, own))

    def text(self, name: str) -> str:
        return self.config[name].strip()

    def flag(self, name: str) -> bool:
        return self.text(name).lower() == "true"

    def seconds(self, name: str) -> int:
        return int(self.text(name))

    @property
    def source_alias(self) -> str:
        return self.text("source.cluster.alias")

    @property
    def target_alias(self) -> str:
        return self.text("target.cluster.alias")

    @property
    def policy(self) -> ReplicationPolicy:
        return policy.policy(
            self.text("replication.policy.class"), self.config["replication.policy.separator"]
        )

    def topic_filter(self) -> NameFilter:
        return NameFilter.of(self.config["topics"], self.config["topics.exclude"])

    def group_filter(self) -> NameFilter:
        return NameFilter.of(self.config["groups"], self.config["groups.exclude"])

    def replicated_topics(self) -> str:
        """MirrorSourceConnector.shouldReplicateTopic as one regex (kctl's subscribePattern):
        the filter passes, and the topic is neither internal nor a remote topic of the target
        (which would mirror it back)."""
        unwanted = f"{policy.INTERNAL}|{self.policy.remote_of(self.target_alias)}"
        return f"(?!{unwanted})" + self.topic_filter().pattern()

    def replicates(self, topic: str) -> bool:
        return re.fullmatch(self.replicated_topics(), topic) is not None

    @property
    def offset_syncs_on_target(self) -> bool:
        return self.text("offset-syncs.topic.location") == TARGET_SIDE

    @property
    def offset_syncs_topic(self) -> str:
        alias = self.source_alias if self.offset_syncs_on_target else self.target_alias
        return policy.offset_syncs_topic(alias)

    @property
    def offset_syncs_cluster(self) -> dict[str, str]:
        return self.target if self.offset_syncs_on_target else self.source


def _client(config: Mapping[str, str], side: str, own: Mapping[str, str]) -> dict[str, str]:
    """A side's client settings: its `<side>.cluster.*` keys, over the worker's own cluster's
    settings when it names no brokers of its own."""
    prefix = f"{side}.cluster."
    given = {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix) and k != f"{prefix}alias"}
    return given if "bootstrap.servers" in given else {**own, **given}
