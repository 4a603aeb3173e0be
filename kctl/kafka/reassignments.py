"""Partition reassignment (KIP-455) over the wire: start or cancel moves, list those in flight,
and wait for them to end.

confluent-kafka has no AlterPartitionReassignments / ListPartitionReassignments, so the
requests go through kafka-python (kctl.kafka.pyadmin).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka import TopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from kctl.kafka.client import Connection
from kctl.kafka.pyadmin import call, exit_code
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

Plan = dict[tuple[str, int], list[int] | None]  # the new replicas of each partition; None: cancel
POLL_S = 0.1

_HINTS = {
    InvalidReplicationAssignmentError: " (a broker twice, or one that is unknown or not alive)",
    NoReassignmentInProgressError: " (no reassignment in progress)",
}


def alter(conn: Connection, plan: Plan) -> None:
    """Send the plan (replicas, or None to cancel) and fail on the first partition refused."""
    outcome = call(
        conn,
        "reassign partitions",
        lambda admin, timeout_ms: admin.alter_partition_reassignments(
            {TopicPartition(t, p): r for (t, p), r in plan.items()}, timeout_ms=timeout_ms
        ),
    )
    for tp, error in sorted(outcome.items()):
        if error is not None:
            name = getattr(error, "__name__", str(error))
            hint = next((h for cls, h in _HINTS.items() if error is cls), "")
            raise KctlError(
                f"cannot reassign {tp.topic}/{tp.partition}: {name}{hint}",
                exit_code(error) if isinstance(error, type) else ExitCode.ERROR,
            )


def ongoing(conn: Connection) -> dict[tuple[str, int], dict[str, list[int]]]:
    """Every ongoing reassignment: (topic, partition) -> replicas, adding and removing."""
    listed = call(
        conn,
        "list reassignments",
        lambda admin, timeout_ms: admin.list_partition_reassignments(timeout_ms=timeout_ms),
    )
    return {(tp.topic, tp.partition): doc for tp, doc in sorted(listed.items())}


def wait(
    conn: Connection,
    partitions: set[tuple[str, int]],
    timeout: float,
    progress: Callable[[dict], None] | None = None,
) -> None:
    """Poll until none of `partitions` is still reassigning; report each change of progress."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        pending = {k: v for k, v in ongoing(conn).items() if k in partitions}
        if pending != last and progress is not None:
            progress(pending)
        last = pending
        if not pending:
            return
        if time.monotonic() > deadline:
            raise KctlError(
                f"{len(pending)} reassignment(s) still in progress after {timeout:g}s "
                "(`kctl topic reassign --list` shows them)",
                ExitCode.UNREACHABLE,
            )
        time.sleep(POLL_S)
