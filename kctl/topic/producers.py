"""The producer state each partition's leader keeps, as `kctl topic producers` shows it.

The same rows as `kafka-transactions.sh describe-producers`, for every partition of a topic
or the ones asked for, from DescribeProducers (KIP-664, kctl.kafka.topics). The topic and its
partitions are checked against the cluster's metadata first, so an unknown one gets the same
one-line error as in every other command.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kctl.kafka import topics
from kctl.kafka.client import Connection, fetch_metadata, find_topic
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

# kafka-transactions.sh's ProducerId, ProducerEpoch, ... in kctl's style; the JSON keys are
# the same names with underscores.
COLUMNS = [
    "partition",
    "producer-id",
    "producer-epoch",
    "latest-coordinator-epoch",
    "last-sequence",
    "last-timestamp",
    "current-transaction-start-offset",
]
NONE = -1  # Kafka's "no such value": no marker written yet, no open transaction


def describe(
    conn: Connection, topic: str, partitions: list[int] | None
) -> tuple[list[dict], KctlError | None]:
    """One row per active producer per partition, by partition then producer id, and the error
    for partitions without a leader (None if every one has one): no replica answers for them,
    where Kafka's tool would wait for a leader until it timed out (exit 3)."""
    led, offline = _partitions(conn, topic, partitions)
    states = topics.describe_producers(conn, topic, led)
    rows = [_row(partition, producer) for partition, producers in states.items() for producer in producers]
    failure = (
        None
        if not offline
        else KctlError(
            f"topic {topic!r} partition(s) {','.join(map(str, offline))} have no leader (offline): "
            "their producers are unknown",
            ExitCode.UNREACHABLE,
        )
    )
    return rows, failure


def _partitions(conn: Connection, topic: str, partitions: list[int] | None) -> tuple[list[int], list[int]]:
    """The partitions asked for, or all of the topic's, split into those with a leader and
    those without; unknown ones are exit 4."""
    meta = find_topic(fetch_metadata(conn.admin(), conn), topics.validate_name(topic))
    for p in partitions or []:
        if p not in meta.partitions:
            raise KctlError(
                f"topic {topic!r} has no partition {p} (it has 0..{len(meta.partitions) - 1})",
                ExitCode.NOT_FOUND,
            )
    wanted = sorted(set(partitions or meta.partitions))
    return (
        [p for p in wanted if meta.partitions[p].leader >= 0],
        [p for p in wanted if meta.partitions[p].leader < 0],
    )


def _row(partition: int, producer: dict) -> dict:
    """One producer as DescribeProducers tells it, as a JSON row keyed by the column names."""
    values = [
        partition,
        producer["producer_id"],
        producer["producer_epoch"],
        _known(producer["coordinator_epoch"]),
        producer["last_sequence"],
        _iso(producer["last_timestamp"]),
        _known(producer["current_transaction_start_offset"]),
    ]
    return {_key(column): value for column, value in zip(COLUMNS, values)}


def cells(row: dict) -> list:
    """A row of `describe` as table cells, in COLUMNS order."""
    return [row[_key(column)] for column in COLUMNS]


def _key(column: str) -> str:
    """A column's JSON key: tables use hyphens, JSON keys underscores, as elsewhere in kctl."""
    return column.replace("-", "_")


def _known(value: int) -> int | None:
    """Kafka's -1 sentinel as null ("-" in tables)."""
    return None if value == NONE else value


def _iso(ms: int) -> str | None:
    """Milliseconds since the epoch as UTC ISO 8601, e.g. 2024-05-01T12:00:00.123Z."""
    if ms == NONE:
        return None
    moment = datetime.fromtimestamp(ms // 1000, UTC).replace(microsecond=ms % 1000 * 1000)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
