"""MM2's records, in the Kafka protocol's encoding (big-endian integers; a STRING is an INT16
length and UTF-8): OffsetSync (MM/OffsetSync.java, no version), Checkpoint and Heartbeat
(MC/Checkpoint.java, MC/Heartbeat.java, value version 0)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 0


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str:
        length = self.take(">h")
        text = self._data[self._at : self._at + length].decode()
        self._at += length
        return text


@dataclass(frozen=True)
class OffsetSync:
    """The record at `upstream` offset of topic/partition on the source is at `downstream`
    in the target's remote topic."""

    topic: str
    partition: int
    upstream: int
    downstream: int

    def key(self) -> bytes:
        return _string(self.topic) + struct.pack(">i", self.partition)

    def value(self) -> bytes:
        return struct.pack(">qq", self.upstream, self.downstream)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> OffsetSync:
        k = _Reader(key)
        topic, partition = k.string(), k.take(">i")
        upstream, downstream = struct.unpack(">qq", value)
        return cls(topic, partition, upstream, downstream)


@dataclass(frozen=True)
class Checkpoint:
    """Group `group`'s committed `upstream` offset of a source partition, translated to
    `downstream` in the remote topic `topic` (the target's name) and `partition`."""

    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    metadata: str = ""

    def key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + struct.pack(">i", self.partition)

    def value(self) -> bytes:
        return struct.pack(">hqq", VERSION, self.upstream, self.downstream) + _string(self.metadata)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        k, v = _Reader(key), _Reader(value)
        group, topic, partition = k.string(), k.string(), k.take(">i")
        v.take(">h")  # the version: 0, the only one
        upstream, downstream = v.take(">q"), v.take(">q")
        return cls(group, topic, partition, upstream, downstream, v.string())


@dataclass(frozen=True)
class Heartbeat:
    source_alias: str
    target_alias: str
    timestamp: int  # ms

    def key(self) -> bytes:
        return _string(self.source_alias) + _string(self.target_alias)

    def value(self) -> bytes:
        return struct.pack(">hq", VERSION, self.timestamp)
