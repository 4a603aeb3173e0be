"""What a consumer group subscribes to: topic names and regular expressions, and the topics
they come to. The group's subscribed topics, with their ids and partition counts, are what
its target assignment is computed over; a change of them is a reason to assign again.

A regular expression a member subscribes to brings its topics once the coordinator has
resolved it: after the heartbeat that brought it is answered, as Kafka resolves it in the
background.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

import re2

from brokerd.coordinator.consumer_group.model import ConsumerGroup, ConsumerGroupMember

log = logging.getLogger(__name__)

INTERNAL_TOPIC_PREFIX = "__"  # internal topics never match a regex subscription

TopicMetadata = dict[str, tuple[uuid.UUID, int]]  # topic name -> (topic id, partition count)


def subscribed_metadata(group: ConsumerGroup, catalog: Mapping[str, tuple[uuid.UUID, int]]) -> TopicMetadata:
    """The topics some member subscribes to (by name or resolved regex) that exist."""
    names = set(group.subscribed_topic_names())
    for member in group.members.values():
        names |= matching(resolved(group, member), catalog)
    return {name: catalog[name] for name in sorted(names) if name in catalog}


def resolve_regexes(group: ConsumerGroup) -> bool:
    """Resolve the regular expressions members subscribed to since the last heartbeat, and
    forget those no member subscribes to any more (Kafka's regex tombstone). True when one was
    resolved: its member's topics changed, a reason to assign again even if another member
    already had them."""
    subscribed = group.subscribed_regexes()
    new = subscribed - group.resolved_regexes
    group.resolved_regexes = subscribed
    if new:
        log.info("group %s: resolved regular expression(s) %s", group.group_id, ", ".join(sorted(new)))
    return bool(new)


def resolved(group: ConsumerGroup, member: ConsumerGroupMember) -> str | None:
    """The member's regex once the group has resolved it; until then it brings no topics."""
    regex = member.subscribed_topic_regex
    return regex if regex in group.resolved_regexes else None


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # an invalid regex is the client's error, answered, not logged


def topic_regex(regex: str) -> Any:  # re2 has no type hints
    """Kafka compiles a subscription regex with RE2J, in time linear in the topic name
    whatever the pattern; a backtracking engine would let one client's ``(a+)+$`` hold the
    coordinator for minutes on a 30-character topic name. RE2 is that engine and syntax."""
    return re2.compile(regex, _RE2_OPTIONS)


def matching(regex: str | None, catalog: Mapping[str, object]) -> set[str]:
    if not regex:
        return set()
    try:
        pattern = topic_regex(regex)
    except re2.error:
        return set()
    return {
        name for name in catalog if not name.startswith(INTERNAL_TOPIC_PREFIX) and pattern.fullmatch(name)
    }
