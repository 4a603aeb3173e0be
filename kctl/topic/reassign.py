"""The reassignment plans `kctl topic reassign` takes: kafka-reassign-partitions.sh's JSON
format, so a plan written for Kafka works here too, or one partition's `--replicas`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:  # the Plan alias only: kafka-python's admin client is not needed to read one
    from kctl.kafka.reassignments import Plan


def read_plan(path: Path) -> Plan:
    """A kafka-reassign-partitions.sh plan: {"version":1,"partitions":[{topic,partition,replicas}]}."""
    try:
        doc = json.loads(path.read_text())
        return {
            (str(e["topic"]), int(e["partition"])): [int(r) for r in e["replicas"]] for e in doc["partitions"]
        }
    except OSError as exc:
        raise KctlError(f"cannot read plan {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise KctlError(
            f"invalid plan {path}: expected "
            '{"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]} '
            f"({exc})",
            ExitCode.INVALID_INPUT,
        ) from None


def parse_replicas(text: str) -> list[int]:
    """'3,1' -> [3, 1]: the first broker is the preferred leader; duplicates are refused."""
    try:
        replicas = [int(r) for r in text.split(",") if r.strip()]
    except ValueError:
        raise KctlError(
            f"invalid --replicas {text!r}: expected broker ids, e.g. 3,1", ExitCode.INVALID_INPUT
        ) from None
    if not replicas or len(set(replicas)) != len(replicas):
        raise KctlError(f"invalid --replicas {text!r}: give distinct broker ids", ExitCode.INVALID_INPUT)
    return replicas
