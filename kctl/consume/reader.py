"""The record loop of `kctl consume`: poll, render, write to stdout, and commit where asked.

The same loop serves partitions kctl assigned itself (with per-partition stop offsets) and
partitions a consumer group hands out (unbounded, changing at every rebalance); only the
group mode commits, and the commit mode decides whether a record is committed before or
after it has been written out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import Enum
from typing import cast

from kctl.consume.assignment import PartitionPlan
from kctl.kafka import consumer as consumers
from kctl.kafka.client import Consumer
from kctl.kafka.consumer import ClusterWatch, Message
from kctl.kafka.errors import KafkaError, exit_code_for
from kctl.kafka.record import Record
from kctl.shell import console
from kctl.shell.errors import KctlError

BATCH = 1000
POLL_TIMEOUT_S = 0.2

Render = Callable[[Record], bytes]
Keep = Callable[[Record], bool]


class Commit(str, Enum):
    AFTER = "after"  # at-least-once: a record is committed once it has been written and flushed
    BEFORE = "before"  # at-most-once: committed before it is written, so a crash may lose it
    NEVER = "never"


class Reader:
    """Prints the records of the partitions it is given until every bounded one is done.

    `bounded=False` (group mode) keeps reading with no partition at all, waiting for a
    rebalance to hand some out.
    """

    def __init__(
        self,
        consumer: Consumer,
        topic: str,
        render: Render,
        commit: Commit = Commit.NEVER,
        bounded: bool = True,
        keep: Keep | None = None,
    ):
        self.consumer = consumer
        self.topic = topic
        self.render = render
        self.keep = keep
        self.commit = commit
        self.bounded = bounded
        self.stops: dict[int, int | None] = {}
        self.active: set[int] = set()
        self.positions: dict[int, int] = {}  # partition -> offset after the last rendered record
        self.count = 0

    def assign(self, plans: list[PartitionPlan]) -> None:
        """Read exactly these ranges (kctl's own assignment, no group)."""
        self.stops = {p.partition: p.stop for p in plans}
        self.active = {p.partition for p in plans if not p.empty}
        consumers.assign(self.consumer, self.topic, {p.partition: p.start for p in plans if not p.empty})

    def add(self, partitions: list[int]) -> None:
        """Partitions a rebalance handed over: followed with no end."""
        for p in partitions:
            self.stops[p] = None
            self.active.add(p)

    def remove(self, partitions: list[int]) -> None:
        """Partitions a rebalance took away: their unprinted records belong to the next owner."""
        self.active.difference_update(partitions)
        for p in partitions:
            self.positions.pop(p, None)

    def run(self, limit: int | None, watch: ClusterWatch) -> None:
        out = sys.stdout.buffer
        while (self.active or not self.bounded) and (limit is None or self.count < limit):
            want = BATCH if limit is None else min(BATCH, limit - self.count)
            chunks = self._batch(want)
            watch.check(self.consumer)
            if not chunks:
                if self.commit is not Commit.NEVER and self.positions:
                    self._commit()  # records all filtered out are done with all the same
                continue
            self.count += len(chunks)  # before writing: a reader who saw it, counts it
            if self.commit is Commit.BEFORE:
                self._commit()
            out.write(b"".join(chunks))
            out.flush()
            if self.commit is Commit.AFTER:
                self._commit()

    def _batch(self, want: int) -> list[bytes]:
        """Rendered records of one consume() call, at most `want`; the per-record hot path."""
        chunks = []
        stops, active, positions = self.stops, self.active, self.positions
        # Only records are rendered, never error events (kctl.kafka.record).
        render = cast(Callable[[Message], bytes], self.render)
        keep = cast(Callable[[Message], bool] | None, self.keep)
        for msg in self.consumer.consume(num_messages=want, timeout=POLL_TIMEOUT_S):
            error = msg.error()
            if error is not None:
                self._on_event(msg, error)
                continue
            p, offset = msg.partition(), msg.offset()
            if p not in active:
                continue
            assert offset is not None  # a record's offset is set
            stop = stops[p]
            if stop is not None and offset >= stop:
                active.discard(p)
                continue
            if keep is None or keep(msg):
                chunks.append(render(msg))
            positions[p] = offset + 1  # a record filtered out is read, and committed, all the same
            if stop is not None and offset + 1 >= stop:
                active.discard(p)
        return chunks

    def _on_event(self, msg: Message, error: KafkaError) -> None:
        """End of a partition closes it if bounded; any other partition error ends the run."""
        p = msg.partition()
        if error.code() == KafkaError._PARTITION_EOF:
            end = msg.offset()
            assert p is not None and end is not None  # the partition that ended, and its end
            stop = self.stops.get(p)
            if stop is not None and end >= stop:
                self.active.discard(p)
            return
        if (
            msg.topic() is None
            and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
            and self.commit is Commit.NEVER
        ):
            # Without a group, group.id is a placeholder librdkafka insists on and nothing needs
            # its coordinator: a principal the ACLs let read the topic, but not describe that
            # group, reads all the same.
            return
        where = self.topic if msg.topic() is None else f"{msg.topic()}/{p}"
        raise KctlError(f"cannot consume {where}: {error.str()}", exit_code_for(error))

    def _commit(self) -> None:
        """Commit the offsets after the records rendered since the last commit.

        A failed commit (usually a rebalance in between) is not fatal: those records are
        read again by the partition's next owner, which is what at-least-once promises.
        """
        positions = dict(self.positions)
        self.positions.clear()
        failed = consumers.commit(self.consumer, self.topic, positions) if positions else None
        if failed is None:
            return
        partition, reason = failed
        if partition is None:
            console.warn(f"commit failed, the records will be read again: {reason}")
        else:
            console.warn(
                f"commit of {self.topic}/{partition} failed, its records will be read again: {reason}"
            )
