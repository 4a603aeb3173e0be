"""ConsumerGroupHeartbeat as the consumer group coordinator takes it: the request and its
answer, Kafka's checks of a request and of the member epoch it carries, and how a heartbeat
updates its member."""

from __future__ import annotations

from dataclasses import dataclass

import re2
from kafka.errors import (
    FencedMemberEpochError,
    InvalidRequestError,
    KafkaError,
    UnsupportedAssignorError,
)

from brokerd.coordinator.consumer_group.model import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroupMember,
)
from brokerd.coordinator.consumer_group.subscriptions import topic_regex


class InvalidRegularExpressionError(KafkaError):  # type: ignore[misc]  # kafka-python's errors are untyped (Any)
    errno = 128
    message = "INVALID_REGULAR_EXPRESSION"
    description = "The regular expression is not valid."


@dataclass
class Heartbeat:
    """A ConsumerGroupHeartbeat as the coordinator takes it (None: unchanged)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


@dataclass
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None: unchanged since the last answer


def assignor_name(name: str) -> str:
    """Kafka accepts the assignors' short names or their class names."""
    short = name.rsplit(".", 1)[-1].lower()
    return {"uniformassignor": "uniform", "rangeassignor": "range"}.get(short, short)


def validate(request: Heartbeat, assignors: tuple[str, ...]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    if not request.group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    if request.version >= 1 and not request.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if request.version == 0 and request.member_epoch != 0 and not request.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if request.instance_id is not None and not request.instance_id:
        raise InvalidRequestError("InstanceId can't be empty.")
    if request.rack_id is not None and not request.rack_id:
        raise InvalidRequestError("RackId can't be empty.")
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise InvalidRequestError(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            )
    elif request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise InvalidRequestError("InstanceId can't be null.")
    elif request.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise InvalidRequestError("MemberEpoch is invalid.")
    if request.server_assignor is not None and assignor_name(request.server_assignor) not in assignors:
        raise UnsupportedAssignorError(
            f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
            + ", ".join(assignors)
            + "."
        )
    if request.subscribed_topic_regex is not None:
        try:
            topic_regex(request.subscribed_topic_regex)
        except re2.error as exc:
            reason = exc.args[0].decode() if isinstance(exc.args[0], bytes) else exc.args[0]
            raise InvalidRegularExpressionError(
                f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a valid regular "
                f"expression: {reason}."
            ) from None


def check_epoch(member: ConsumerGroupMember, request: Heartbeat) -> None:
    """Kafka's throwIfMemberEpochIsInvalid: a member ahead of us, or behind us other than
    by a lost answer (previous epoch, owning a subset of what it has), must rejoin."""
    received = request.member_epoch
    if received > member.member_epoch:
        raise FencedMemberEpochError(
            f"The consumer group member has a greater epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
        )
    if received < member.member_epoch:
        owned = request.owned
        subset = owned is not None and all(
            partitions <= member.assigned.get(topic_id, frozenset()) for topic_id, partitions in owned.items()
        )
        if received != member.previous_member_epoch or not subset:
            raise FencedMemberEpochError(
                f"The consumer group member has a smaller epoch ({received}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
            )


def update_member(member: ConsumerGroupMember, request: Heartbeat, resolved_regexes: set[str]) -> bool:
    """Take what the heartbeat changed; True when the subscription did (a reason to assign).
    A regex no member had before brings its topics only once resolved, after this heartbeat
    (Kafka resolves it in the background), so it is no reason to assign yet."""
    changed = False
    if request.rack_id is not None:
        member.rack_id = request.rack_id
    if request.rebalance_timeout_ms != -1:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
    if request.instance_id is not None:
        member.instance_id = request.instance_id
    if request.subscribed_topic_names is not None:
        names = sorted(set(request.subscribed_topic_names))
        changed |= names != member.subscribed_topic_names
        member.subscribed_topic_names = names
    if request.subscribed_topic_regex is not None:
        regex = request.subscribed_topic_regex or None
        if regex != member.subscribed_topic_regex:
            changed |= regex is None or regex in resolved_regexes or member.subscribed_topic_regex is not None
        member.subscribed_topic_regex = regex
    if request.server_assignor is not None:
        assignor = assignor_name(request.server_assignor)
        changed |= assignor != member.server_assignor
        member.server_assignor = assignor
    return changed
