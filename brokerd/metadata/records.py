"""Metadata records, their JSON codec and their frames in the metadata log.

A record is a frozen dataclass named after its KRaft counterpart (TopicRecord,
PartitionRecord, PartitionChangeRecord, RemoveTopicRecord, ConfigRecord). In the log it is
one JSON object: its fields, its "type", and the stamp of its append (LogEntry): its offset,
the controller epoch of the controller that wrote it (None for a leader's ISR change or a
config change, which any broker may write) and the time it was written. Beyond KRaft's
fields, PartitionRecord and PartitionChangeRecord carry the controller's reasons for the
leader moves that views narrate: its last unclean election (last_unclean_election) and its
last move back to the preferred leader on the imbalance check (last_leader_rebalance). A
record written before a field existed lacks it, and the partition keeps the field's default.

On disk each record is a frame: 4-byte length, 4-byte CRC-32C of the payload, the payload.
A reader stops at the first frame that is incomplete or fails its CRC: a torn tail left by
a writer that died mid-append is never applied, and the next writer cuts it off.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from crc32c import crc32c

from brokerd.metadata.registration import PartitionRegistration, Reason

TOPIC = "TopicRecord"
PARTITION = "PartitionRecord"
PARTITION_CHANGE = "PartitionChangeRecord"
REMOVE_TOPIC = "RemoveTopicRecord"
CONFIG = "ConfigRecord"

TOPIC_RESOURCE = "TOPIC"
BROKER_RESOURCE = "BROKER"
GROUP_RESOURCE = "GROUP"  # a consumer or share group's configs (KIP-848, KIP-932)


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: str
    configs: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A new partition: its registration, stored as its fields beside the topic's name."""

    topic: str
    registration: PartitionRegistration


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """The fields of one partition that changed; None: unchanged. (A reason, once set, is
    only ever replaced by a newer one, so None never means cleared.)"""

    topic: str
    partition: int
    replicas: list[int] | None = None
    leader: int | None = None
    leader_epoch: int | None = None
    isr: list[int] | None = None
    partition_epoch: int | None = None
    adding_replicas: list[int] | None = None
    removing_replicas: list[int] | None = None
    last_unclean_election: Reason | None = None
    last_leader_rebalance: Reason | None = None


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    name: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """One config of a topic, a broker ("<id>" or "<default>") or a group, set to ``value``
    or, with None, removed."""

    resource_type: str
    resource_name: str
    name: str
    value: str | None


MetadataRecord = TopicRecord | PartitionRecord | PartitionChangeRecord | RemoveTopicRecord | ConfigRecord

_TYPES: dict[str, type[MetadataRecord]] = {
    TOPIC: TopicRecord,
    PARTITION: PartitionRecord,
    PARTITION_CHANGE: PartitionChangeRecord,
    REMOVE_TOPIC: RemoveTopicRecord,
    CONFIG: ConfigRecord,
}
_FIELDS = {kind: tuple(f.name for f in fields(kind)) for kind in _TYPES.values()}


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A record as the log holds it, with the stamp of its append."""

    offset: int
    controller_epoch: int | None
    time: float
    record: MetadataRecord

    def to_json(self) -> dict[str, Any]:
        record = self.record
        if isinstance(record, PartitionRecord):
            doc = {"topic": record.topic, **record.registration.to_json()}
        elif isinstance(record, PartitionChangeRecord):  # only what changed
            doc = {
                name: value
                for name in _FIELDS[PartitionChangeRecord]
                if (value := getattr(record, name)) is not None
            }
        else:
            doc = {name: getattr(record, name) for name in _FIELDS[type(record)]}
        doc.update(
            type=type(record).__name__,
            offset=self.offset,
            controller_epoch=self.controller_epoch,
            time=self.time,
        )
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LogEntry:
        values = dict(doc)
        kind = values.pop("type")
        offset, controller_epoch, time = (
            values.pop("offset"),
            values.pop("controller_epoch"),
            values.pop("time"),
        )
        if kind == PARTITION:
            return cls(
                offset,
                controller_epoch,
                time,
                PartitionRecord(values.pop("topic"), PartitionRegistration(**values)),
            )
        return cls(offset, controller_epoch, time, _TYPES[kind](**values))


_FRAME = struct.Struct(">II")
MAX_RECORD_BYTES = 64 * 1024 * 1024


def encode(entry: LogEntry) -> bytes:
    payload = json.dumps(entry.to_json(), separators=(",", ":"), sort_keys=True).encode()
    return _FRAME.pack(len(payload), crc32c(payload)) + payload


def decode(data: bytes | memoryview, start: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The whole, valid frames of ``data`` from ``start`` (each the record as stored: see
    LogEntry.from_json); and where the next one begins."""
    documents = []
    position = start
    while position + _FRAME.size <= len(data):
        length, crc = _FRAME.unpack_from(data, position)
        end = position + _FRAME.size + length
        if length > MAX_RECORD_BYTES or end > len(data):
            break
        payload = bytes(data[position + _FRAME.size : end])
        if crc32c(payload) != crc:
            break
        documents.append(json.loads(payload))
        position = end
    return documents, position
