"""Real record batches (built by kafka-python, as a producer would) and real logs on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from brokerd.storage.log_config import LogConfig
from brokerd.storage.partition_log import PartitionLog

NONE, GZIP, LZ4 = 0, 1, 3


def make_batch(
    count: int = 1,
    *,
    prefix: str = "v",
    timestamp: int = 1_000_000,
    value_size: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = NONE,
    transactional: bool = False,
) -> bytes:
    """A v2 batch of ``count`` records ``<prefix>-<i>`` stamped ``timestamp + i``, base offset 0."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i in range(count):
        value = f"{prefix}-{i}".encode().ljust(value_size, b".")
        builder.append(i, timestamp=timestamp + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def records(data) -> list[tuple[int, int, bytes]]:
    """Decode ``(offset, timestamp, value)`` of every record, as a consumer would."""
    found = []
    batches = MemoryRecords(bytes(data))
    while (batch := batches.next_batch()) is not None:
        assert batch.validate_crc()
        found.extend((record.offset, record.timestamp, record.value) for record in batch)
    return found


class Clock:
    """A settable wall clock in seconds, for retention and roll timing."""

    def __init__(self, now_ms: int = 1_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> float:
        return self.now_ms / 1000


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def open_log(log_dir: Path, clock: Clock):
    """Open the partition in ``log_dir`` with the given topic configs."""

    def open_(configs: dict[str, str] | None = None) -> PartitionLog:
        return PartitionLog.open(log_dir, LogConfig.from_configs(configs or {}), time=clock)

    return open_


def crash(log: PartitionLog) -> None:
    """Lose the process without close(): the page cache keeps what was written to the mapped logs,
    index entries not yet flushed are lost, nothing is trimmed."""
    for segment in log.segments:
        segment._log.close()
