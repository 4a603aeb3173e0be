"""MM2's naming: the replication policies (what a topic is called on the target and which
cluster a remote topic came from), its internal topics, and the topic and group filters."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
POLICIES = (DEFAULT_POLICY, IDENTITY_POLICY)
HEARTBEATS = "heartbeats"
TOPICS_EXCLUDE = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_EXCLUDE = r"console-consumer-.*, connect-.*, __.*"


@dataclass(frozen=True)
class ReplicationPolicy:
    """DefaultReplicationPolicy (`<alias><separator><topic>`), or with `identity`
    IdentityReplicationPolicy (names unchanged but for heartbeats; it cannot detect cycles)."""

    separator: str = "."
    identity: bool = False

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        if self.identity and topic != HEARTBEATS:
            return topic
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The alias of the cluster a remote topic came from; None for a local topic (for
        IdentityReplicationPolicy, every topic but a remote heartbeats topic)."""
        if self.identity and not topic.endswith(f"{self.separator}{HEARTBEATS}"):
            return None
        alias, found, _ = topic.partition(self.separator)
        return alias if found and alias else None

    def remote_of(self, alias: str) -> str:
        """A regex of the names of topics that came from cluster `alias` (topicSource == alias)."""
        if self.identity:
            return (
                re.escape(f"{alias}{self.separator}")
                + ".*"
                + re.escape(f"{self.separator}{HEARTBEATS}")
                + r"\Z"
            )
        return re.escape(f"{alias}{self.separator}")

    def is_internal_topic(self, topic: str) -> bool:
        """ReplicationPolicy.isInternalTopic: Kafka's (`__`, `.`) and MM2's own topics."""
        mm2 = topic.endswith(".internal") or topic.startswith("mm2")
        return topic.startswith("__") or topic.startswith(".") or mm2


INTERNAL = r"__|\.|mm2|.*\.internal\Z"  # what is_internal_topic says, as a regex


def policy(class_name: str, separator: str) -> ReplicationPolicy:
    return ReplicationPolicy(separator, identity=class_name.endswith("IdentityReplicationPolicy"))


def offset_syncs_topic(alias: str) -> str:
    """`alias`: the target's when the topic is on the source cluster, else the source's."""
    return f"mm2-offset-syncs.{alias}.internal"


def checkpoints_topic(source_alias: str) -> str:
    return f"{source_alias}.checkpoints.internal"


@dataclass(frozen=True)
class NameFilter:
    """MM2's DefaultTopicFilter / DefaultGroupFilter: a name passes when it matches one of
    the include regexes and none of the exclude ones (Java regexes, whole name)."""

    include: str
    exclude: str

    @classmethod
    def of(cls, include: str, exclude: str) -> NameFilter:
        return cls(_alternation(include), _alternation(exclude))

    def passes(self, name: str) -> bool:
        return re.fullmatch(self.include, name) is not None and re.fullmatch(self.exclude, name) is None

    def pattern(self) -> str:
        """One regex of the same names, for kctl's `subscribePattern` (a whole-name match)."""
        return rf"(?!(?:{self.exclude})\Z)(?:{self.include})"


def _alternation(regexes: str) -> str:
    """A comma-separated list of regexes as one; an empty list matches nothing."""
    parts = [part.strip() for part in regexes.split(",") if part.strip()]
    return "|".join(f"(?:{part})" for part in parts) if parts else "(?!)"


def bad_regex_list(value: str) -> str | None:
    """A ConfigKey check: the reason a list of regexes does not compile, or None."""
    try:
        re.compile(_alternation(value))
    except re.error as exc:
        return f"not a list of regular expressions: {exc}"
    return None
