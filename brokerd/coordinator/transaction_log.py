"""The ``__transaction_state`` topic: which partition holds a transactional id, and its
record format.

Records use Kafka's own layouts, so the topic reads like a real cluster's: key = version 0 +
TransactionLogKey v0 (transactional_id), value = version 0 + TransactionLogValue v0
(producer_id int64, producer_epoch int16, transaction_timeout_ms int32, transaction_status
int8, transaction_partitions nullable [topic, [partition int32]],
transaction_last_update_timestamp_ms int64, transaction_start_timestamp_ms int64).
An Empty transaction is written with null partitions, as Kafka does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kafka.record.memory_records import MemoryRecords

from brokerd.coordinator.records import read_string, write_string
from brokerd.coordinator.transaction_state import TransactionMetadata, TransactionState

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0

_VALUE_HEAD = struct.Struct(">hqhib")
_TIMESTAMPS = struct.Struct(">qq")


def transaction_key(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + write_string(transactional_id)


def transaction_value(meta: TransactionMetadata) -> bytes:
    parts = [
        _VALUE_HEAD.pack(
            VALUE_VERSION, meta.producer_id, meta.producer_epoch, meta.timeout_ms, int(meta.state)
        )
    ]
    if meta.state == TransactionState.EMPTY:
        parts.append(struct.pack(">i", -1))
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(partition)
        parts.append(struct.pack(">i", len(by_topic)))
        for topic, indexes in by_topic.items():
            parts.append(write_string(topic) + struct.pack(f">i{len(indexes)}i", len(indexes), *indexes))
    parts.append(_TIMESTAMPS.pack(meta.last_update_ms, meta.start_ms))
    return b"".join(parts)


def read_transaction_records(data: bytes) -> Iterator[tuple[str, TransactionMetadata | None]]:
    """Yield (transactional id, metadata, or None for a tombstone) in log order; records of
    unknown key or value versions are skipped, as Kafka skips them."""
    records = MemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        if batch.is_control_batch:
            continue
        for record in batch:
            key = record.key
            if key is None or struct.unpack_from(">h", key)[0] != KEY_VERSION:
                continue
            transactional_id, _ = read_string(key, 2)
            if record.value is None:
                yield transactional_id, None
            elif struct.unpack_from(">h", record.value)[0] == VALUE_VERSION:
                yield transactional_id, _decode_value(transactional_id, record.value)


def _decode_value(transactional_id: str, value: bytes) -> TransactionMetadata:
    _, producer_id, epoch, timeout_ms, status = _VALUE_HEAD.unpack_from(value)
    pos = _VALUE_HEAD.size
    (topics,) = struct.unpack_from(">i", value, pos)
    pos += 4
    partitions: set[tuple[str, int]] = set()
    for _ in range(max(topics, 0)):
        topic, pos = read_string(value, pos)
        (count,) = struct.unpack_from(">i", value, pos)
        indexes = struct.unpack_from(f">{count}i", value, pos + 4)
        pos += 4 + 4 * count
        partitions.update((topic, index) for index in indexes)
    last_update_ms, start_ms = _TIMESTAMPS.unpack_from(value, pos)
    return TransactionMetadata(
        transactional_id,
        producer_id,
        epoch,
        timeout_ms,
        TransactionState(status),
        frozenset(partitions),
        start_ms,
        last_update_ms,
    )
