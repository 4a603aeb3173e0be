"""What a producer's batch must satisfy before the leader appends it, and how it is stamped.

Checks follow Apache Kafka's ``UnifiedLog.analyzeAndValidateRecords`` and
``LogValidator`` in the same order, so a client gets the error code a real
broker would send. All of them read the 61-byte header and one CRC pass over
the batch; records are decoded only to refuse keyless records on compacted topics.
Timestamps are bounded from the header too: its base timestamp and max timestamp stand
for the batch's records.
"""

from __future__ import annotations

from kafka.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageSizeTooLargeError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
)

from brokerd.storage.log_config import LogConfig
from brokerd.storage.recompression import records_of
from brokerd.storage.record_batch import (
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_POSITION,
    MAX_COMPRESSION_TYPE,
    BatchHeader,
    ByteBuffer,
    crc_matches,
    read_header,
    set_base_offset_and_epoch,
    set_log_append_time,
)

NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP: the producer gave none


def validate_client_batch(batch: ByteBuffer, max_message_bytes: int) -> BatchHeader:
    """Check the single batch a produce request carries for one partition; return its header."""
    view = memoryview(batch)
    if len(view) <= MAGIC_POSITION:
        raise CorruptRecordError(f"Record batch of {len(view)} bytes is too short to hold a header")
    if view[MAGIC_POSITION] != CURRENT_MAGIC:
        raise UnsupportedForMessageFormatError(
            f"Record batch magic {view[MAGIC_POSITION]} is not supported; only magic 2 is"
        )
    if len(view) < HEADER_SIZE:
        raise CorruptRecordError(f"Record batch of {len(view)} bytes is shorter than its 61-byte header")
    header = read_header(view)
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or header.size > len(view):
        raise CorruptRecordError(
            f"Record batch length {header.batch_length} does not match the {len(view)} bytes received"
        )
    if header.size < len(view):
        raise InvalidRecordError("A produce request must carry exactly one record batch per partition")
    if header.base_offset != 0:
        raise InvalidRecordError(
            f"The baseOffset of a produced record batch must be 0, not {header.base_offset}"
        )
    if header.size > max_message_bytes:
        raise MessageSizeTooLargeError(
            f"Record batch of {header.size} bytes is larger than max.message.bytes={max_message_bytes}"
        )
    if not crc_matches(view, 0, header):
        raise CorruptRecordError("Record batch CRC-32C does not match its contents")
    _validate_fields(header)
    return header


def _validate_fields(header: BatchHeader) -> None:
    if header.records_count <= 0 or header.last_offset_delta + 1 != header.records_count:
        raise InvalidRecordError(
            f"Record batch has lastOffsetDelta {header.last_offset_delta} but {header.records_count} records"
        )
    if header.is_control:
        raise InvalidRecordError("Clients are not allowed to write control records")
    if header.compression_type > MAX_COMPRESSION_TYPE:
        raise InvalidRecordError(f"Unknown compression type id {header.compression_type}")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise InvalidRecordError(f"Idempotent producer {header.producer_id} sent no base sequence")
    if header.is_transactional and header.producer_id < 0:
        raise InvalidRecordError("A transactional record batch must carry a producer id")


def validate_timestamps(header: BatchHeader, config: LogConfig, now_ms: int) -> None:
    """With CreateTime, Kafka refuses a batch whose timestamps lie further than
    message.timestamp.before.max.ms in the past or after.max.ms in the future."""
    if config.log_append_time:
        return
    earliest, latest = now_ms - config.timestamp_before_max_ms, now_ms + config.timestamp_after_max_ms
    for timestamp in (header.base_timestamp, header.max_timestamp):
        if timestamp != NO_TIMESTAMP and not earliest <= timestamp <= latest:
            raise InvalidTimestampError(
                f"Timestamp {timestamp} of a record in the batch is out of range. "
                f"The timestamp should be within [{earliest}, {latest}]"
            )


class RecordErrorsError(InvalidRecordError):  # type: ignore[misc]  # kafka-python's errors are untyped (Any)
    """INVALID_RECORD naming the rejected records: Produce v8+ reports them as record_errors
    (``(batch index, message)``), as Kafka's RecordValidationException does."""

    def __init__(self, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.record_errors = record_errors


def validate_keys_for_compaction(batch: ByteBuffer, topic_partition: str) -> None:
    """A compacted topic keeps the latest record of every key, so a keyless record has no
    place in it; Kafka refuses such batches whole. It decodes records (within
    recompression.records_of's bound), and only for compacted topics."""
    try:
        keyless = [index for index, record in enumerate(records_of(batch)) if record.key is None]
    except InvalidRecordError:
        raise
    except Exception as exc:  # noqa: BLE001 - a codec this broker cannot decode
        raise UnsupportedCompressionTypeError(f"Cannot decode the batch to check its keys: {exc}") from None
    if not keyless:
        return
    message = f"Compacted topic cannot accept message without key in topic partition {topic_partition}."
    raise RecordErrorsError(
        f"One or more records have been rejected due to {len(keyless)} record errors in total: {message}",
        [(index, message) for index in keyless],
    )


def stamp_batch(
    batch: ByteBuffer, base_offset: int, leader_epoch: int, log_append_time_ms: int | None = None
) -> tuple[bytearray, BatchHeader]:
    """Copy a validated client batch with the broker's fields set; return it and its new header.

    Offset and leader epoch are outside the CRC, so the client's CRC stays
    valid; only a LogAppendTime topic changes CRC-covered bytes.
    """
    stamped = bytearray(batch)
    set_base_offset_and_epoch(stamped, base_offset, leader_epoch)
    if log_append_time_ms is not None:
        set_log_append_time(stamped, read_header(stamped), log_append_time_ms)
    return stamped, read_header(stamped)
