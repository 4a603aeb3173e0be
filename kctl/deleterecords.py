"""DeleteRecords for `kctl topic delete-records`: which offsets to cut each partition at, and
the new log start offsets the leaders answer with.

The offsets come from the command line or from a kafka-delete-records.sh offsets file, so a
file written for Kafka works here too. Offset -1 means "up to the high watermark", as in Kafka.
"""

from __future__ import annotations

import json
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, OffsetSpec

from kctl.kafka.client import Connection, find_topic, list_offsets
from kctl.kafka.errors import from_kafka
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

Cuts = dict[tuple[str, int], int]
HIGH_WATERMARK = -1
FILE_FORMAT = '{"partitions":[{"topic":..,"partition":..,"offset":..}],"version":1}'


def parse_offset(text: str) -> int:
    """'N', or '-1' / 'end' for the high watermark (delete every record)."""
    if text.strip().lower() == "end":
        return HIGH_WATERMARK
    try:
        offset = int(text)
    except ValueError:
        raise KctlError(f"invalid --offset {text!r}: expected N, -1 or end", ExitCode.INVALID_INPUT) from None
    if offset < HIGH_WATERMARK:
        raise KctlError(f"invalid --offset {text!r}: offsets start at 0 (-1 or end: the high watermark)",
                        ExitCode.INVALID_INPUT)
    return offset


def read_offsets_file(path: Path) -> Cuts:
    """A kafka-delete-records.sh --offset-json-file: one offset per topic partition."""
    try:
        doc = json.loads(path.read_text())
        cuts = {(str(e["topic"]), int(e["partition"])): int(e["offset"]) for e in doc["partitions"]}
    except OSError as exc:
        raise KctlError(f"cannot read {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise KctlError(f"invalid offsets file {path}: expected {FILE_FORMAT} ({exc})",
                        ExitCode.INVALID_INPUT) from None
    if not cuts or min(cuts.values()) < HIGH_WATERMARK:
        raise KctlError(f"invalid offsets file {path}: give at least one partition, offsets >= -1",
                        ExitCode.INVALID_INPUT)
    return cuts


def for_topic(metadata: ClusterMetadata, topic: str, partitions: list[int] | None, offset: int) -> Cuts:
    """The same offset for the given partitions of `topic`, or for all of them."""
    known = sorted(find_topic(metadata, topic).partitions)
    return {(topic, p): offset for p in (partitions or known)}


def delete(admin: AdminClient, conn: Connection, metadata: ClusterMetadata,
           cuts: Cuts) -> tuple[dict[tuple[str, int], int], KctlError | None]:
    """Delete the records before each offset. Returns the new low watermark of every partition
    that succeeded, and the error of the first that failed (None if all succeeded).

    Unknown topics and partitions are refused before anything is deleted (librdkafka would
    only time out on them)."""
    for topic, partition in sorted(cuts):
        if partition not in find_topic(metadata, topic).partitions:
            raise KctlError(f"topic {topic!r} has no partition {partition}", ExitCode.NOT_FOUND)
    futures = admin.delete_records([TopicPartition(t, p, o) for (t, p), o in sorted(cuts.items())],
                                   request_timeout=conn.timeout, operation_timeout=conn.timeout)
    low: dict[tuple[str, int], int] = {}
    failure = None
    for tp, future in futures.items():
        try:
            low[(tp.topic, tp.partition)] = future.result().low_watermark
        except KafkaException as exc:
            failure = failure or _failure(admin, conn, exc.args[0], (tp.topic, tp.partition), cuts)
    return low, failure


def _failure(admin: AdminClient, conn: Connection, error: KafkaError, key: tuple[str, int], cuts: Cuts) -> KctlError:
    """One line per failure; an offset past the end names the high watermark, as a bad offset."""
    topic, partition = key
    if error.code() != KafkaError.OFFSET_OUT_OF_RANGE:
        return from_kafka(error, f"delete records of {topic}/{partition}")
    end = list_offsets(admin, conn, [key], OffsetSpec.latest())[key]
    beyond = "" if end is None else f" {end}"
    return KctlError(f"OFFSET_OUT_OF_RANGE: offset {cuts[key]} is beyond the high watermark{beyond} "
                     f"of {topic}/{partition}", ExitCode.INVALID_INPUT)
