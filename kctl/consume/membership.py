"""`kctl consume -g GROUP`: joining a consumer group and narrating its rebalances on stderr.

A class watching two terminals should see partitions move: every assignment, revocation and
loss is one line on stderr, while records keep flowing on stdout.
"""

from __future__ import annotations

from enum import Enum

from kctl.consume.reader import Reader
from kctl.kafka import consumer as consumers
from kctl.kafka.client import Consumer
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import Kind, OffsetRange

# librdkafka waits 45 s before giving a killed member's partitions away; a demo should not.
GROUP_DEFAULTS = {"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}


class GroupProtocol(str, Enum):
    """How a member joins its group: the classic JoinGroup/SyncGroup rebalances, or KIP-848's
    consumer protocol, where the broker assigns and moves partitions one at a time."""

    CLASSIC = "classic"
    CONSUMER = "consumer"


class RemoteAssignor(str, Enum):
    """The broker-side assignors of KIP-848 (group.remote.assignor)."""

    UNIFORM = "uniform"
    RANGE = "range"


def group_settings(
    group: str, protocol: GroupProtocol, reset: str | None, assignor: RemoteAssignor | None = None
) -> dict:
    """The consumer settings of a group member. With the consumer protocol the session and
    heartbeat belong to the broker (group.consumer.* or the group's configs): librdkafka
    refuses session.timeout.ms and heartbeat.interval.ms there. ``assignor`` asks the broker
    for its uniform or range assignor (its default is the first of group.consumer.assignors)."""
    if protocol is GroupProtocol.CONSUMER:
        chosen = {} if assignor is None else {"group.remote.assignor": assignor.value}
        return {"group.id": group, "group.protocol": "consumer", "auto.offset.reset": reset, **chosen}
    return {**GROUP_DEFAULTS, "group.id": group, "auto.offset.reset": reset}


def reset_policy(spec: OffsetRange, partitions: list[int] | None, exit_at_end: bool) -> str:
    """-o start|end become auto.offset.reset: where a group without committed offsets begins."""
    if partitions is not None or exit_at_end:
        raise KctlError(
            "-p and -e choose partitions and ends, a group does that itself: drop them when using -g",
            ExitCode.USAGE,
        )
    if spec.stop is not None or spec.start.kind not in (Kind.START, Kind.END):
        raise KctlError(
            "with -g, -o is where a new group starts: start or end (move an existing "
            "group with `kctl group reset-offsets`)",
            ExitCode.USAGE,
        )
    return "earliest" if spec.start.kind is Kind.START else "latest"


class Membership:
    """Rebalance callbacks: keep the reader's partitions in step and say what happened."""

    def __init__(self, group: str, reader: Reader, quiet: bool, incremental: bool = False):
        self.group = group
        self.reader = reader
        self.quiet = quiet
        self.incremental = incremental  # KIP-848: the broker hands partitions out step by step
        self.held: set[int] = set()

    def subscribe(self, consumer: Consumer, topic: str) -> None:
        consumers.subscribe(consumer, topic, self._assigned, self._revoked, self._lost)

    def _assigned(self, partitions: list[int]) -> None:
        """An empty assignment means no partitions only for a member holding none: with
        KIP-848 each assignment is a step that adds partitions, and after a revocation an
        empty step adds none to those the member keeps."""
        self.reader.add(partitions)
        self.held |= set(partitions)
        self._say("assigned", partitions, None if self.held else self._idle())

    def _idle(self) -> str:
        if self.incremental:
            return (
                "no partitions yet: the broker waits for other members to revoke them, or the "
                "group has more members than partitions"
            )
        return "no partitions: the group has more members than partitions"

    def _revoked(self, partitions: list[int]) -> None:
        self.reader.remove(partitions)
        self.held -= set(partitions)
        self._say("revoked", partitions)

    def _lost(self, partitions: list[int]) -> None:
        self.reader.remove(partitions)
        self.held -= set(partitions)
        self._say("lost (the group moved on without this member)", partitions)

    def _say(self, what: str, partitions: list[int], none: str | None = None) -> None:
        """One line per event; an empty revocation (before a first assignment) says nothing."""
        if self.quiet or not (partitions or none):
            return
        names = ", ".join(f"{self.reader.topic}/{p}" for p in partitions)
        console.info(f"group {self.group}: {what} {names or none}")
