"""Storage layer of brokerd: partition logs on disk in Apache Kafka's layout.

A partition is a directory of segments (``.log`` + ``.index`` +
``.timeindex`` + ``.txnindex``) holding record batches exactly as they
travel on the wire; see ``partition_log`` for the entry point.
"""

from brokerd.storage.control_batch import (
    ABORT,
    COMMIT,
    EndTxnMarker,
    build_end_txn_marker,
    read_end_txn_marker,
)
from brokerd.storage.log_config import LogConfig
from brokerd.storage.log_validator import stamp_batch, validate_client_batch
from brokerd.storage.partition_log import AppendInfo, PartitionLog
from brokerd.storage.record_batch import (
    BatchHeader,
    crc_matches,
    iter_batch_headers,
    iter_batch_spans,
    last_offset_in,
    read_header,
)
from brokerd.storage.time_index import TimestampOffset
from brokerd.storage.topic_name import parse_partition_dir_name, partition_dir_name, validate_topic_name
from brokerd.storage.transaction_index import AbortedTxn, TransactionIndex

__all__ = [
    "ABORT",
    "COMMIT",
    "AbortedTxn",
    "AppendInfo",
    "EndTxnMarker",
    "BatchHeader",
    "LogConfig",
    "PartitionLog",
    "TimestampOffset",
    "TransactionIndex",
    "build_end_txn_marker",
    "crc_matches",
    "iter_batch_headers",
    "iter_batch_spans",
    "last_offset_in",
    "parse_partition_dir_name",
    "partition_dir_name",
    "read_end_txn_marker",
    "read_header",
    "stamp_batch",
    "validate_client_batch",
    "validate_topic_name",
]
