"""Metadata records and their frames in the metadata log.

A record is a small JSON object named after its KRaft counterpart (TopicRecord,
PartitionRecord, PartitionChangeRecord, RemoveTopicRecord, ConfigRecord), with its offset in
the log, the controller epoch of the controller that wrote it (None for a leader's ISR change
or a config change, which any broker may write) and the time it was written. Beyond KRaft's
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

from crc32c import crc32c

TOPIC = "TopicRecord"
PARTITION = "PartitionRecord"
PARTITION_CHANGE = "PartitionChangeRecord"
REMOVE_TOPIC = "RemoveTopicRecord"
CONFIG = "ConfigRecord"

TOPIC_RESOURCE = "TOPIC"
BROKER_RESOURCE = "BROKER"
GROUP_RESOURCE = "GROUP"  # a consumer or share group's configs (KIP-848, KIP-932)

_FRAME = struct.Struct(">II")
MAX_RECORD_BYTES = 64 * 1024 * 1024


def encode(record: dict) -> bytes:
    payload = json.dumps(record, separators=(",", ":"), sort_keys=True).encode()
    return _FRAME.pack(len(payload), crc32c(payload)) + payload


def decode(data: bytes | memoryview, start: int = 0) -> tuple[list[dict], int]:
    """The whole, valid frames of ``data`` from ``start``; and where the next one begins."""
    records = []
    position = start
    while position + _FRAME.size <= len(data):
        length, crc = _FRAME.unpack_from(data, position)
        end = position + _FRAME.size + length
        if length > MAX_RECORD_BYTES or end > len(data):
            break
        payload = bytes(data[position + _FRAME.size : end])
        if crc32c(payload) != crc:
            break
        records.append(json.loads(payload))
        position = end
    return records, position
