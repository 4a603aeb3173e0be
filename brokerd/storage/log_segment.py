"""A log segment: one ``.log`` file of record batches and its indexes.

Files are named by the segment's base offset, zero-padded to 20 digits, as in
Kafka. The ``.log`` holds batches exactly as they go out on the wire; while
the segment is active the file is preallocated (sparse) to ``segment.bytes``
and batches are copied into its mmap, and reads are memoryview slices of it.
The sparse ``.index`` and ``.timeindex`` are kept in memory and written out
(see ``abstract_index``), so the log's mapping is the one descriptor a segment
in use holds. A ``.txnindex`` lists the transactions aborted by markers in
the segment.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch

from brokerd.storage.log_config import LogConfig
from brokerd.storage.mapped_file import MappedFile
from brokerd.storage.offset_index import OffsetIndex
from brokerd.storage.record_batch import (
    CURRENT_MAGIC,
    HEADER_SIZE,
    INT32_MAX,
    BatchHeader,
    ByteBuffer,
    crc_matches,
    iter_batch_headers,
    iter_batch_spans,
    read_header,
)
from brokerd.storage.time_index import TimeIndex, TimestampOffset
from brokerd.storage.transaction_index import TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / f"{base_offset:020d}{suffix}"


def _first_record_at_or_after(batch: memoryview, header: BatchHeader, timestamp: int) -> TimestampOffset:
    """Offset and timestamp of the first record in ``batch`` stamped at or after ``timestamp``.

    ListOffsets by time answers with a record, not a batch, so this is the one
    place storage decodes records: one batch per ListOffsets request, never on
    the append or read path. A batch we cannot decode (no library for its
    codec here, or a payload only a broker decompressing every produce would
    have refused) is answered at batch granularity instead of failing.
    """
    try:
        for record in DefaultRecordBatch(bytes(batch)):
            if record.timestamp >= timestamp:
                return TimestampOffset(record.timestamp, record.offset)
    except Exception:  # noqa: BLE001 - any decoding failure, see above
        pass
    return TimestampOffset(header.max_timestamp, header.base_offset)


class LogSegment:
    """Batches ``[base_offset, next_offset)`` of a partition, with sparse indexes.

    Kept in memory: where the data ends (``size``), the next offset, the
    largest timestamp (for retention and the time index) and the first
    batch's timestamp (for ``segment.ms`` rolling).
    """

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> None:
        self.base_offset = base_offset
        index_path = segment_path(directory, base_offset, INDEX_SUFFIX)
        time_index_path = segment_path(directory, base_offset, TIME_INDEX_SUFFIX)
        self._indexes_existed = index_path.exists() and time_index_path.exists()
        self._log = MappedFile(segment_path(directory, base_offset, LOG_SUFFIX))
        self.offset_index = OffsetIndex(index_path, base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(time_index_path, base_offset, config.segment_index_bytes)
        self.txn_index = TransactionIndex(segment_path(directory, base_offset, TXN_INDEX_SUFFIX), base_offset)
        self._index_interval_bytes = config.index_interval_bytes
        self._created_ms = now_ms
        self.roll_jitter_ms = config.random_segment_jitter()
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self._offset_of_max_timestamp = base_offset
        self._bytes_since_last_index_entry = 0
        self.rolling_based_timestamp: int | None = None
        # Set by the log: the first offset of the earliest transaction still open where this
        # segment begins (its base offset if none). No transaction that started before it
        # has its abort marker here or later. -1 until known: nothing may be skipped.
        self.unstable_offset_at_start = -1

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, config: LogConfig, capacity: int, now_ms: int
    ) -> LogSegment:
        """A new, empty active segment with room for ``capacity`` bytes."""
        segment = cls(directory, base_offset, config, now_ms)
        segment._log.resize(0)
        for index in (segment.offset_index, segment.time_index):
            index.reset()
            index.path.touch()  # beside every log from the start, as in Kafka; written at the first flush
        segment.txn_index.replace([])
        segment.activate(capacity)
        return segment

    @property
    def path(self) -> Path:
        return self._log.path

    @property
    def largest_timestamp(self) -> int:
        """Newest batch timestamp, or the file's mtime when batches carry none (as Kafka)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.stat(self.path).st_mtime * 1000)

    # -- loading and recovery -------------------------------------------------

    def load(self) -> bool:
        """Trust the files as found; False when the segment must be recovered instead.

        Cheap: checks the indexes and walks only the batches after the last
        offset index entry, which is also how the in-memory state is rebuilt.
        """
        if not (self._indexes_existed and self.offset_index.is_sane() and self.time_index.is_sane()):
            return False
        last_entry = self.offset_index.last_entry()
        if last_entry is not None:
            relative_offset, position = last_entry
            if position + HEADER_SIZE > self._log.capacity:
                return False
            if read_header(self._log.buffer, position).last_offset != self.base_offset + relative_offset:
                return False
        return self._scan_tail(self._log.capacity) == self._log.capacity

    def recover(self) -> int:
        """Validate every batch from the start, rebuild both indexes, cut at the first bad batch.

        A batch is bad when it is incomplete, not magic 2, fails its CRC-32C or
        does not continue the offsets before it; a zero-filled preallocated
        tail stops the walk the same way. Returns the bytes cut off.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self._reset_state()
        buffer = self._log.buffer
        for position, header in iter_batch_headers(buffer, 0, self._log.capacity):
            if not self._continues_log(buffer, position, header):
                break
            if position == 0:
                self.rolling_based_timestamp = header.max_timestamp
            self._index_batch(position, header)
            self.size = position + header.size
        truncated = self._log.capacity - self.size
        if truncated:
            self._log.resize(self.size)
        return truncated

    def activate(self, capacity: int) -> None:
        """Make this the segment that takes appends: room for at least ``capacity`` bytes."""
        self._log.resize(max(capacity, self._log.capacity))

    def on_become_inactive(self) -> None:
        """Record the final largest timestamp, trim the log to its data, and write both indexes
        and drop them from memory (an inactive segment changes no more)."""
        self.time_index.maybe_append(self.max_timestamp, self._offset_of_max_timestamp, skip_full_check=True)
        self._log.resize(self.size)
        self.offset_index.close()
        self.time_index.close()

    # -- writing --------------------------------------------------------------

    def should_roll(self, config: LogConfig, header: BatchHeader, now_ms: int) -> bool:
        """Kafka's roll conditions for appending the batch described by ``header``."""
        if self.size == 0:
            return header.size > self._log.capacity
        return (
            self.size > config.segment_bytes - header.size
            or self.size + header.size > self._log.capacity
            or self.is_due_to_roll(config, now_ms, header.max_timestamp)
            or self.offset_index.is_full
            or self.time_index.is_full
            or header.last_offset - self.base_offset > INT32_MAX
        )

    def is_due_to_roll(self, config: LogConfig, now_ms: int, timestamp_ms: int) -> bool:
        """Whether the segment is older than segment.ms (or max.compaction.lag.ms on a compacted
        topic) less the jitter it drew when created."""
        return self.time_waited_for_roll(now_ms, timestamp_ms) > config.max_segment_ms - self.roll_jitter_ms

    def time_waited_for_roll(self, now_ms: int, timestamp_ms: int) -> int:
        """Age of the segment measured in batch timestamps when it has any, else wall time."""
        if self.rolling_based_timestamp is not None and self.rolling_based_timestamp >= 0:
            return timestamp_ms - self.rolling_based_timestamp
        return now_ms - self._created_ms

    def append(self, batch: ByteBuffer, header: BatchHeader) -> None:
        """Copy an offset-stamped batch to the end of the segment and index it."""
        position = self.size
        if position + header.size > self._log.capacity:
            raise RuntimeError(f"segment {self.path} has no room for a {header.size}-byte batch")
        self._log.buffer[position : position + header.size] = batch
        if position == 0:
            self.rolling_based_timestamp = header.max_timestamp
        self._index_batch(position, header)
        self.size = position + header.size

    def truncate_to(self, offset: int) -> int:
        """Remove the batch containing ``offset`` and everything after; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, base_offset, _, _ = found
        self.offset_index.truncate_to(base_offset)
        self.time_index.truncate_to(base_offset)
        self.txn_index.truncate_to(base_offset)
        removed = self.size - position
        self._log.discard_from(position)
        self._scan_tail(position)
        return removed

    def flush(self) -> None:
        self._log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def unmap(self) -> None:
        """Give back the log's mapping, and the descriptor it holds, until the next read maps it."""
        self._log.close()

    def close(self) -> None:
        self.on_become_inactive()
        self.unmap()

    def delete(self) -> None:
        self._log.delete()
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    # -- reading --------------------------------------------------------------

    @property
    def buffer(self) -> mmap.mmap | memoryview:
        """The mapped ``.log`` bytes, for the rare reads past a batch header (control records)."""
        return self._log.buffer

    def batch_headers(self, start_position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """Headers of the batches from ``start_position`` on. An empty range maps nothing, so
        a broker's idle, empty partitions hold no descriptor."""
        if start_position >= self.size:
            return iter(())
        return iter_batch_headers(self._log.buffer, start_position, self.size)

    def translate_offset(self, offset: int) -> tuple[int, int, int, int] | None:
        """``(position, base_offset, last_offset, size)`` of the first batch ending at or after ``offset``."""
        start = self.offset_index.lookup(offset).position
        for span in iter_batch_spans(self._log.buffer, start, self.size):
            if span[2] >= offset:
                return span
        return None

    def read(
        self, start_offset: int, max_bytes: int, max_offset: int, min_one_message: bool = True
    ) -> memoryview | None:
        """Whole batches from the one containing ``start_offset``.

        Stops before a batch whose base offset is >= ``max_offset`` or that
        would take the total past ``max_bytes``, but with ``min_one_message``
        returns the first batch whatever its size (Kafka's minOneMessage), so
        a consumer can never get stuck behind a batch larger than its fetch
        size. None when the segment holds nothing at or after ``start_offset``.
        """
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start, base_offset, _, size = found
        if base_offset >= max_offset or (size > max_bytes and not min_one_message):
            return self._log.view(start, start)
        end = start + size
        for position, base_offset, _, size in iter_batch_spans(self._log.buffer, end, self.size):
            if base_offset >= max_offset or position + size - start > max_bytes:
                break
            end = position + size
        return self._log.view(start, end)

    def find_offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """The first record stamped at or after ``timestamp``, or None if the segment has none.

        The time index entry found for ``timestamp - 1`` proves every batch up
        to its offset is older than ``timestamp``; batches are walked from there.
        """
        older = self.time_index.lookup(timestamp - 1)
        start = self.offset_index.lookup(older.offset).position
        for position, header in self.batch_headers(start):
            if header.max_timestamp >= timestamp:
                batch = self._log.view(position, position + header.size)
                return _first_record_at_or_after(batch, header, timestamp)
        return None

    # -- internals ------------------------------------------------------------

    def _reset_state(self) -> None:
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self._offset_of_max_timestamp = self.base_offset
        self._bytes_since_last_index_entry = 0
        self.rolling_based_timestamp = None

    def _continues_log(self, buffer: ByteBuffer, position: int, header: BatchHeader) -> bool:
        return (
            header.magic == CURRENT_MAGIC
            and header.base_offset >= self.next_offset
            and 0 <= header.last_offset_delta
            and header.last_offset - self.base_offset <= INT32_MAX
            and crc_matches(buffer, position, header)
        )

    def _note_batch(self, header: BatchHeader) -> None:
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self._offset_of_max_timestamp = header.last_offset
        self.next_offset = header.next_offset

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        """Kafka's sparse indexing: an entry once more than index.interval.bytes went unindexed.

        Appends roll before an index fills; recovery of a segment written with
        a larger ``segment.index.bytes`` just indexes it more sparsely.
        """
        self._note_batch(header)
        if self._bytes_since_last_index_entry > self._index_interval_bytes and not (
            self.offset_index.is_full or self.time_index.is_full
        ):
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.size

    def _scan_tail(self, end: int) -> int:
        """Rebuild in-memory state from the indexes plus the batches after their last entry.

        Returns the position where complete magic-2 batches stop, at most ``end``.
        """
        self._reset_state()
        start = self.offset_index.last_position()
        last_time = self.time_index.last_entry()
        if last_time is not None:
            self.max_timestamp = last_time[0]
            self._offset_of_max_timestamp = self.base_offset + last_time[1]
        reached = start
        for position, header in iter_batch_headers(self._log.buffer, start, end):
            if header.magic != CURRENT_MAGIC:
                break
            self._note_batch(header)
            reached = position + header.size
        self.size = reached
        self._bytes_since_last_index_entry = reached - start
        if reached:
            self.rolling_based_timestamp = read_header(self._log.buffer, 0).max_timestamp
        return reached
