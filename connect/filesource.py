"""FileStreamSource's reading as a Spark streaming source: the complete lines of a file that
keeps growing, each once. An offset is a byte position just after a line's terminator, so a
micro-batch is a byte range of whole lines that reads the same lines when Spark replays it
(after a crash, from its checkpoint), as long as the file is only appended to.

Lines end with `\\n`, `\\r\\n` or a lone `\\r`, as Kafka's connector splits them; a `\\r` that
is the last byte written so far waits for the next byte (it may be half of `\\r\\n`), and a
last line without a terminator waits for one. Bytes are decoded as UTF-8.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming import DataStreamWriter
from pyspark.sql.streaming.datasource import ReadLimit

from connect import progress
from connect.converters import Converter
from connect.lag import bytes_behind
from connect.queryspec import QuerySpec

SCAN_BYTES = 4 << 20  # a micro-batch's range ends at the last terminator in this much more
_TERMINATOR = re.compile(rb"\r\n|\r|\n")


def stream(spark: SparkSession, spec: QuerySpec) -> DataStreamWriter:
    """FileStreamSource's query: the file's lines into the topic through kctl's sink."""
    spark.dataSource.register(FileLinesSource)
    value = spec.converter("value")
    return (
        spark.readStream.format("connect-file")
        .option("file", spec.config["file"])
        .option("value.converter", value.class_name)
        .option("value.converter.schemas.enable", str(value.schemas_enable).lower())
        .load()
        .writeStream.format("kctl")
        .options(**spec.kafka)
        .option("topic", spec.config["topic"].strip())
    )


def lag(spec: QuerySpec) -> int:
    """Bytes behind: the file's length past the committed position."""
    end = progress.committed_end(spec.checkpoint) or {}
    try:
        length = os.path.getsize(spec.config["file"])
    except FileNotFoundError:
        length = 0
    return bytes_behind(length, int(str(end.get("position", 0))))


@dataclass(frozen=True)
class LineRange(InputPartition):
    path: str
    start: int
    end: int


class FileLinesSource(DataSource):
    """`spark.readStream.format("connect-file")` with options `file`, `value.converter` and
    `value.converter.schemas.enable`: rows of a null key and the converted line."""

    @classmethod
    def name(cls) -> str:
        return "connect-file"

    def schema(self) -> str:
        return "key binary, value binary"

    def streamReader(self, schema: object) -> DataSourceStreamReader:
        options = {k.lower(): v for k, v in self.options.items()}
        enabled = options.get("value.converter.schemas.enable", "true").lower() != "false"
        converter = Converter(options.get("value.converter", ""), enabled)
        return FileLinesReader(options["file"], converter)


class FileLinesReader(DataSourceStreamReader):
    def __init__(self, path: str, converter: Converter) -> None:
        self.path = path
        self.converter = converter

    def initialOffset(self) -> dict[str, int]:
        return {"position": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        return {"position": complete_end(self.path, int(start["position"]))}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[LineRange]:
        return [LineRange(self.path, int(start["position"]), int(end["position"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[None, bytes]]:
        assert isinstance(partition, LineRange)
        for line in lines(partition.path, partition.start, partition.end):
            yield None, self.converter.from_line(line)

    def commit(self, end: dict[str, int]) -> None:
        """Spark's checkpoint is the record of progress; nothing to release."""


def complete_end(path: str, start: int) -> int:
    """The position after the last complete line within SCAN_BYTES of `start` (further if no
    terminator is found that far), or `start` when there is none yet or no file."""
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            scanned = start
            while True:
                data = handle.read(SCAN_BYTES)
                if not data:
                    return start
                end = _last_terminator_end(data)
                if end is not None:
                    return scanned + end
                scanned += len(data)
    except FileNotFoundError:
        return start


def _last_terminator_end(data: bytes) -> int | None:
    body = data[:-1] if data.endswith(b"\r") else data  # a last \r may be half of \r\n
    end = max(body.rfind(b"\n"), body.rfind(b"\r"))
    return None if end < 0 else end + 1


def lines(path: str, start: int, end: int) -> list[str]:
    """The lines in bytes [start, end) of the file, without their terminators."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    if len(data) != end - start:
        raise OSError(f"{path} is shorter than {end} bytes: was it truncated?")
    return [part.decode(errors="replace") for part in _TERMINATOR.split(data)[:-1]]
