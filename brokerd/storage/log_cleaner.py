"""Log compaction (``cleanup.policy=compact``): keep the latest record of every key.

Kafka's cleaner, pass by pass: an offset map (key -> offset of its latest record) is built
over the cleanable part of the log, then every closed segment in that part is rewritten
without the records a later one with the same key supersedes. Tombstones (null values)
survive ``delete.retention.ms`` so that consumers catching up see the deletion, then go too.
Offsets never change: a cleaned batch keeps its base offset, last offset delta, producer
fields and leader epoch, and its surviving records keep their offsets, so consumers,
followers and idempotent producer state read it as before.

The cleanable part ends at the first offset a consumer may not read yet: the active
segment, the high watermark and the first open transaction (the last stable offset); and
before the first segment with a record younger than ``min.compaction.lag.ms``.
Transactional and control batches are kept as they are.

This is the one storage path that decodes records, off the produce and fetch paths.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from brokerd.storage.log_segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_path,
)
from brokerd.storage.record_batch import (
    CRC_START,
    BatchHeader,
    read_header,
    set_base_offset_and_epoch,
    set_log_append_time,
)

if TYPE_CHECKING:
    from brokerd.storage.partition_log import PartitionLog  # which imports this module

CLEANED_SUFFIX = ".cleaned"
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_POSITION = 23
_CRC = struct.Struct(">I")
_CRC_POSITION = 17
_UNLIMITED = 2**31 - 1

OffsetMap = dict[bytes, int]


class _Record(Protocol):
    """What the cleaner reads of a decoded record (kafka-python's ``DefaultRecord``, untyped)."""

    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...


@dataclass(frozen=True)
class CleaningResult:
    segments: int
    bytes_before: int
    bytes_after: int


def build_offset_map(segments: Iterable[LogSegment], end_offset: int) -> OffsetMap:
    """Key -> offset of its latest record below ``end_offset``, over every compactable batch."""
    latest: OffsetMap = {}
    for segment in segments:
        for raw, header in _batches(segment):
            if header.base_offset >= end_offset:
                return latest
            for record in _decode(raw, header) or ():
                if record.key is not None and record.offset < end_offset:
                    latest[record.key] = record.offset
    return latest


def clean_segment(segment: LogSegment, latest: OffsetMap, tombstone_horizon_ms: int) -> bytes:
    """The segment's batches without superseded records and expired tombstones."""
    out = bytearray()
    for raw, header in _batches(segment):
        records = _decode(raw, header)
        kept = [r for r in records or () if _survives(r, latest, tombstone_horizon_ms)]
        if records is None or len(kept) == header.records_count:
            out += raw
        elif kept:
            out += _rebuild(header, kept) or raw
    return bytes(out)


def _batches(segment: LogSegment) -> Iterable[tuple[memoryview, BatchHeader]]:
    view = memoryview(segment.buffer)
    for position, header in segment.batch_headers():
        yield view[position : position + header.size], header


def _decode(raw: memoryview, header: BatchHeader) -> list[_Record] | None:
    """The batch's records, or None for batches kept whole: transactional and control
    batches, and any whose codec this machine lacks."""
    if header.is_transactional or header.is_control:
        return None
    try:
        return list(DefaultRecordBatch(bytes(raw)))
    except Exception:  # noqa: BLE001 - e.g. no snappy/zstd module: keep the batch as it is
        return None


def _survives(record: _Record, latest: OffsetMap, tombstone_horizon_ms: int) -> bool:
    if record.key is None:
        return True  # nothing supersedes a keyless record
    if latest.get(record.key, record.offset) > record.offset:
        return False
    return record.value is not None or record.timestamp >= tombstone_horizon_ms


def _rebuild(header: BatchHeader, records: list[_Record]) -> bytes | None:
    """A batch of the surviving records with the original's offsets and producer fields
    (None when its codec cannot compress here)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=header.compression_type,
        is_transactional=0,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        batch_size=_UNLIMITED,
    )
    for record in records:
        builder.append(
            record.offset - header.base_offset,
            timestamp=record.timestamp,
            key=record.key,
            value=record.value,
            headers=record.headers,
        )
    try:
        batch = bytearray(builder.build())
    except Exception:  # noqa: BLE001 - the codec's module is missing
        return None
    set_base_offset_and_epoch(batch, header.base_offset, header.partition_leader_epoch)
    _LAST_OFFSET_DELTA.pack_into(batch, _LAST_OFFSET_DELTA_POSITION, header.last_offset_delta)
    if header.is_log_append_time:
        set_log_append_time(batch, read_header(batch), header.max_timestamp)  # sets the CRC
    else:
        _CRC.pack_into(batch, _CRC_POSITION, crc32c.crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def write_cleaned(directory: Path, base_offset: int, data: bytes) -> Path:
    """Write a cleaned segment beside the original, durably, under a name recovery discards."""
    path = segment_path(directory, base_offset, LOG_SUFFIX + CLEANED_SUFFIX)
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return path


def swap_in(directory: Path, base_offset: int, cleaned: Path) -> None:
    """Replace a segment's ``.log`` with its cleaned version.

    The indexes go first, so a crash at any point leaves either the old or the cleaned log,
    and in both cases recovery rebuilds the indexes from the log itself.
    """
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        segment_path(directory, base_offset, suffix).unlink(missing_ok=True)
    os.replace(cleaned, segment_path(directory, base_offset, LOG_SUFFIX))


class LogCleaner:
    """Decides when a compacted log is worth a pass, by Kafka's rules: when the share of its
    cleanable bytes written since the last pass reaches ``min.cleanable.dirty.ratio``, or when
    its oldest uncleaned batch is older than ``max.compaction.lag.ms`` whatever that share."""

    def __init__(self) -> None:
        # log -> end of its last pass
        self._cleaned_to: WeakKeyDictionary[PartitionLog, int] = WeakKeyDictionary()

    def maybe_clean(
        self, log: PartitionLog, first_uncleanable_offset: int, now_ms: int
    ) -> CleaningResult | None:
        segments = _cleanable(log, first_uncleanable_offset, now_ms)
        total = sum(s.size for s in segments)
        cleaned_to = self._cleaned_to.get(log, 0)
        dirty_segments = [s for s in segments if s.base_offset >= cleaned_to]
        dirty = sum(s.size for s in dirty_segments)
        if not dirty:
            return None
        if dirty < total * log.config.min_cleanable_dirty_ratio and not _overdue(log, dirty_segments, now_ms):
            return None
        result = compact(log, first_uncleanable_offset, now_ms)
        self._cleaned_to[log] = segments[-1].next_offset
        return result


def _overdue(log: PartitionLog, dirty_segments: list[LogSegment], now_ms: int) -> bool:
    """Whether the first batch of the dirty part was written over ``max.compaction.lag.ms`` ago."""
    _, first_batch = next(dirty_segments[0].batch_headers())
    return first_batch.max_timestamp < now_ms - log.config.max_compaction_lag_ms


def _cleanable(log: PartitionLog, first_uncleanable_offset: int, now_ms: int) -> list[LogSegment]:
    """Closed segments wholly below the first offset that may not be cleaned yet, and, with
    ``min.compaction.lag.ms``, before the first segment holding a record younger than that."""
    lag = log.config.min_compaction_lag_ms
    cleanable = []
    for segment in log.segments[:-1]:
        if segment.next_offset > first_uncleanable_offset or (
            lag and segment.largest_timestamp > now_ms - lag
        ):
            break
        cleanable.append(segment)
    return cleanable


def compact(log: PartitionLog, first_uncleanable_offset: int, now_ms: int) -> CleaningResult:
    """One cleaning pass over the cleanable segments of ``log`` (see ``_cleanable``),
    swapping each cleaned segment in as it is done."""
    segments = _cleanable(log, first_uncleanable_offset, now_ms)
    latest = build_offset_map(segments, first_uncleanable_offset)
    horizon = now_ms - log.config.delete_retention_ms
    before = after = 0
    for segment in segments:
        data = clean_segment(segment, latest, horizon)
        before, after = before + segment.size, after + len(data)
        if len(data) != segment.size:
            log.replace_segment(segment, write_cleaned(log.directory, segment.base_offset, data))
    return CleaningResult(len(segments), before, after)
