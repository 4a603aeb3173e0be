"""A consumed record as kctl reads it: a confluent-kafka Message without an error.

confluent-kafka types each field of a Message as optional, as an error event may lack them;
a record has its topic, partition and offset, and its headers are (name, bytes) pairs. Code
that has checked a Message's error() casts it (or the batch) to Record there, once.
"""

from __future__ import annotations

from typing import Protocol


class Record(Protocol):
    """What kctl reads of a record: `kctl consume`'s formats and the Spark source depend on
    nothing else."""

    def topic(self) -> str: ...
    def partition(self) -> int: ...
    def offset(self) -> int: ...
    def key(self) -> bytes | None: ...
    def value(self) -> bytes | None: ...
    def timestamp(self) -> tuple[int, int]: ...
    def headers(self) -> list[tuple[str, bytes | None]] | None: ...
    def delivery_count(self) -> int | None: ...  # share groups only (KIP-932), else None
