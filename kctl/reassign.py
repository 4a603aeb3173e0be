"""Partition reassignment (KIP-455) through kafka-python, and the plans kctl makes for it.

confluent-kafka has no AlterPartitionReassignments / ListPartitionReassignments, so the
requests go through kafka-python (kctl.pyadmin). Plans use kafka-reassign-partitions.sh's
JSON format, so a plan written for Kafka works here too.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from kafka import TopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from kctl.kafka.client import Connection
from kctl.kafka.pyadmin import call, exit_code
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

Plan = dict[tuple[str, int], list[int] | None]
POLL_S = 0.1

_HINTS = {InvalidReplicationAssignmentError: " (a broker twice, or one that is unknown or not alive)",
          NoReassignmentInProgressError: " (no reassignment in progress)"}


def alter(conn: Connection, plan: Plan) -> None:
    """Send the plan (replicas, or None to cancel) and fail on the first partition refused."""
    outcome = call(conn, "reassign partitions", lambda admin, timeout_ms: admin.alter_partition_reassignments(
        {TopicPartition(t, p): r for (t, p), r in plan.items()}, timeout_ms=timeout_ms))
    for tp, error in sorted(outcome.items()):
        if error is not None:
            name = getattr(error, "__name__", str(error))
            hint = next((h for cls, h in _HINTS.items() if error is cls), "")
            raise KctlError(f"cannot reassign {tp.topic}/{tp.partition}: {name}{hint}",
                            exit_code(error) if isinstance(error, type) else ExitCode.ERROR)


def ongoing(conn: Connection) -> dict[tuple[str, int], dict[str, list[int]]]:
    """Every ongoing reassignment: (topic, partition) -> replicas, adding and removing."""
    listed = call(conn, "list reassignments",
                  lambda admin, timeout_ms: admin.list_partition_reassignments(timeout_ms=timeout_ms))
    return {(tp.topic, tp.partition): doc for tp, doc in sorted(listed.items())}


def wait(conn: Connection, partitions: set[tuple[str, int]], timeout: float,
         progress: Callable[[dict], None] | None = None) -> None:
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
            raise KctlError(f"{len(pending)} reassignment(s) still in progress after {timeout:g}s "
                            "(`kctl topic reassign --list` shows them)", ExitCode.UNREACHABLE)
        time.sleep(POLL_S)


def read_plan(path: Path) -> Plan:
    """A kafka-reassign-partitions.sh plan: {"version":1,"partitions":[{topic,partition,replicas}]}."""
    try:
        doc = json.loads(path.read_text())
        return {(str(e["topic"]), int(e["partition"])): [int(r) for r in e["replicas"]]
                for e in doc["partitions"]}
    except OSError as exc:
        raise KctlError(f"cannot read plan {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise KctlError(f"invalid plan {path}: expected "
                        '{"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]} '
                        f"({exc})", ExitCode.INVALID_INPUT) from None


def parse_replicas(text: str) -> list[int]:
    """'3,1' -> [3, 1]: the first broker is the preferred leader; duplicates are refused."""
    try:
        replicas = [int(r) for r in text.split(",") if r.strip()]
    except ValueError:
        raise KctlError(f"invalid --replicas {text!r}: expected broker ids, e.g. 3,1",
                        ExitCode.INVALID_INPUT) from None
    if not replicas or len(set(replicas)) != len(replicas):
        raise KctlError(f"invalid --replicas {text!r}: give distinct broker ids", ExitCode.INVALID_INPUT)
    return replicas


def balanced(assignment: dict[tuple[str, int], list[int]], brokers: list[int], even: bool = True) -> Plan:
    """Spread replicas evenly over `brokers`, keeping each partition's replication factor.

    Replicas on brokers outside `brokers` must move (a drain); then, while some broker holds
    two replicas more than another (unless `even` is off), one moves from the fullest to the emptiest broker that
    lacks it. Only partitions whose replica set changes are in the plan, so the fewest
    records travel.
    """
    current = {k: list(v) for k, v in assignment.items()}
    for key, replicas in current.items():
        if len(replicas) > len(brokers):
            raise KctlError(f"topic {key[0]} has replication factor {len(replicas)} but only "
                            f"{len(brokers)} broker(s) would remain", ExitCode.CONFLICT)
    load = Counter({b: 0 for b in brokers})
    load.update(r for replicas in current.values() for r in replicas if r in load)
    for key, replicas in sorted(current.items()):
        for i, r in enumerate(replicas):
            if r not in load:
                target = min((b for b in brokers if b not in replicas), key=lambda b: (load[b], b))
                replicas[i] = target
                load[target] += 1
    while even:
        move = _one_move(current, load)
        if move is None:
            break
        key, i, target = move
        load[current[key][i]] -= 1
        load[target] += 1
        current[key][i] = target
    return {k: v for k, v in current.items() if v != assignment[k]}


def _one_move(current: dict[tuple[str, int], list[int]], load: Counter) -> tuple | None:
    """A replica move from the fullest broker to the emptiest, if that evens things out."""
    fullest = max(load, key=lambda b: (load[b], -b))
    for target in sorted(load, key=lambda b: (load[b], b)):
        if load[fullest] - load[target] < 2:
            return None
        for key, replicas in sorted(current.items()):
            if fullest in replicas and target not in replicas:
                return key, replicas.index(fullest), target
    return None
