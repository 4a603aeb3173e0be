"""Topics over the wire: Kafka's rule for their names, and the requests that create, delete,
configure, grow and trim them, elect their leaders and describe their producers.

CreateTopics (also for `kctl bench` and `kctl sql --to`), DeleteTopics,
IncrementalAlterConfigs, CreatePartitions, ElectLeaders and DeleteRecords go through
confluent-kafka; DescribeProducers, which it lacks, through kafka-python (kctl.kafka.pyadmin).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AlterConfigOpType,
    ClusterMetadata,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from kctl.kafka import offsets
from kctl.kafka.client import Connection, fetch_metadata, find_topic, result
from kctl.kafka.errors import exit_code_for, from_kafka
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")

Partition = tuple[str, int]


def validate_name(name: str) -> str:
    """Kafka's own rule, checked before any request so the error says what is wrong."""
    if not _LEGAL_NAME.fullmatch(name) or name in (".", ".."):
        raise KctlError(
            f"invalid topic name {name!r}: use 1-249 of a-z A-Z 0-9 . _ -", ExitCode.INVALID_INPUT
        )
    return name


def create(
    conn: Connection,
    name: str,
    partitions: int,
    replicas: int,
    configs: dict[str, str],
    if_not_exists: bool = False,
) -> bool:
    """Create a topic; returns False when it already existed and `if_not_exists` allows that."""
    validate_name(name)
    admin = conn.admin()
    fetch_metadata(admin, conn)
    request = NewTopic(name, num_partitions=partitions, replication_factor=replicas, config=configs)
    future = admin.create_topics([request], request_timeout=conn.timeout, operation_timeout=conn.timeout)[
        name
    ]
    try:
        future.result()
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise from_kafka(exc, f"create topic {name!r}") from None
        if not if_not_exists:
            raise KctlError(f"topic {name!r} already exists (--if-not-exists ignores this)") from None
        return False
    return True


def ensure(conn: Connection, name: str, partitions: int, replicas: int) -> bool:
    """Create the topic unless the cluster already has it; True when it was created."""
    if name in fetch_metadata(conn.admin(), conn).topics:
        return False
    return create(conn, name, partitions, replicas, {}, if_not_exists=True)


def delete(conn: Connection, name: str) -> None:
    """Delete a topic and all its records."""
    admin = conn.admin()
    fetch_metadata(admin, conn)
    future = admin.delete_topics(
        [validate_name(name)], request_timeout=conn.timeout, operation_timeout=conn.timeout
    )[name]
    result(future, f"delete topic {name!r}")


def alter_configs(conn: Connection, name: str, set_: list[tuple[str, str]], delete_: list[str]) -> None:
    """Set some configs of a topic and remove the overrides of others (back to the default);
    configs not named stay as they are."""
    changes = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_]
    changes += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete_]
    admin = conn.admin()
    fetch_metadata(admin, conn)
    resource = ConfigResource(ResourceType.TOPIC, validate_name(name), incremental_configs=changes)
    result(
        admin.incremental_alter_configs([resource], request_timeout=conn.timeout)[resource],
        f"alter configs of topic {name!r}",
    )


def add_partitions(conn: Connection, name: str, total: int) -> None:
    """Grow a topic to `total` partitions."""
    future = conn.admin().create_partitions(
        [NewPartitions(name, total)], request_timeout=conn.timeout, operation_timeout=conn.timeout
    )[name]
    result(future, f"add partitions to topic {name!r}")


@dataclass(frozen=True)
class LeaderElection:
    """What an election did for one partition."""

    topic: str
    partition: int
    needed: bool  # False: the partition was already led as asked
    error: KctlError | None  # why it got no leader


def elect_leaders(conn: Connection, unclean: bool, topic: str | None) -> list[LeaderElection]:
    """A preferred or unclean election for every partition of `topic` (None: of the cluster),
    partition by partition."""
    admin = conn.admin()
    partitions = None
    if topic is not None:
        meta = find_topic(fetch_metadata(admin, conn), validate_name(topic))
        partitions = [TopicPartition(topic, p) for p in sorted(meta.partitions)]
    kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
    # request_timeout is not passed: confluent-kafka's elect_leaders rejects its own keyword.
    outcome = result(
        admin.elect_leaders(kind, partitions), f"elect {'unclean' if unclean else 'preferred'} leaders"
    )
    elections = []
    for tp, error in sorted(outcome.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
        needed = error is None or error.code() != KafkaError.ELECTION_NOT_NEEDED
        failure = None if error is None or not needed else KctlError(error.str(), exit_code_for(error))
        elections.append(LeaderElection(tp.topic, tp.partition, needed, failure))
    return elections


def delete_records(
    conn: Connection, metadata: ClusterMetadata, cuts: dict[Partition, int]
) -> tuple[dict[Partition, int], KctlError | None]:
    """Delete the records before each offset (-1: up to the high watermark). Returns the new
    low watermark of every partition that succeeded, and the error of the first that failed
    (None if all succeeded).

    Unknown topics and partitions are refused before anything is deleted (librdkafka would
    only time out on them)."""
    for topic, partition in sorted(cuts):
        if partition not in find_topic(metadata, topic).partitions:
            raise KctlError(f"topic {topic!r} has no partition {partition}", ExitCode.NOT_FOUND)
    futures = conn.admin().delete_records(
        [TopicPartition(t, p, o) for (t, p), o in sorted(cuts.items())],
        request_timeout=conn.timeout,
        operation_timeout=conn.timeout,
    )
    low: dict[Partition, int] = {}
    failure = None
    for tp, future in futures.items():
        try:
            low[(tp.topic, tp.partition)] = future.result().low_watermark
        except KafkaException as exc:
            failure = failure or _deletion_failure(conn, exc.args[0], (tp.topic, tp.partition), cuts)
    return low, failure


def _deletion_failure(
    conn: Connection, error: KafkaError, key: Partition, cuts: dict[Partition, int]
) -> KctlError:
    """One line per failure; an offset past the end names the high watermark, as a bad offset."""
    topic, partition = key
    if error.code() != KafkaError.OFFSET_OUT_OF_RANGE:
        return from_kafka(error, f"delete records of {topic}/{partition}")
    end = offsets.high_watermarks(conn, [key])[key]
    beyond = "" if end is None else f" {end}"
    return KctlError(
        f"OFFSET_OUT_OF_RANGE: offset {cuts[key]} is beyond the high watermark{beyond} "
        f"of {topic}/{partition}",
        ExitCode.INVALID_INPUT,
    )


def describe_producers(conn: Connection, topic: str, partitions: list[int]) -> dict[int, list[dict]]:
    """DescribeProducers (KIP-664) for partitions of a topic, each of which must have a leader:
    partition -> its active producers by producer id, each a dict of producer_id,
    producer_epoch, last_sequence, last_timestamp, coordinator_epoch and
    current_transaction_start_offset (-1 where there is none)."""
    if not partitions:
        return {}
    # kafka-python's admin client: the one request here librdkafka does not make
    from kafka import TopicPartition as KafkaPythonPartition

    from kctl.kafka import pyadmin

    wanted = [KafkaPythonPartition(topic, p) for p in partitions]
    states = pyadmin.call(
        conn,
        f"describe the producers of topic {topic!r}",
        lambda admin, _timeout_ms: admin.describe_producers(wanted),
    )
    return {
        tp.partition: [producer._asdict() for producer in sorted(state.active_producers)]
        for tp, state in sorted(states.items())
    }
