"""One replica of a topic partition hosted by this broker: its log plus leader-side state."""

from __future__ import annotations

import asyncio

from kafka.errors import NotLeaderForPartitionError

from brokerd.state import PartitionRecord
from brokerd.storage import AppendInfo, PartitionLog


class Partition:
    """Kafka's ``Partition``: who leads, at which leader epoch, and how far consumers may read.

    The high watermark is the offset below which every in-sync replica has the data; consumers
    never read past it. While this broker is the only in-sync replica it is the log end offset.
    """

    def __init__(self, broker_id: int, topic: str, index: int, log: PartitionLog):
        self.broker_id = broker_id
        self.topic = topic
        self.index = index
        self.log = log
        self.leader_id = -1
        self.leader_epoch = 0
        self.isr: list[int] = []
        self.high_watermark = 0
        self._waiters: list[asyncio.Future] = []

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def update(self, record: PartitionRecord) -> None:
        """Apply the controller's latest decision for this partition."""
        self.leader_id = record.leader
        self.leader_epoch = record.leader_epoch
        self.isr = list(record.isr)
        self._maybe_advance_high_watermark()

    def append_as_leader(self, batch: bytes) -> AppendInfo:
        if not self.is_leader:
            raise NotLeaderForPartitionError(f"broker {self.broker_id} does not lead "
                                             f"{self.topic}-{self.index}")
        info = self.log.append_as_leader(batch, self.leader_epoch)
        if not info.duplicate:
            self._maybe_advance_high_watermark()
        return info

    def read(self, offset: int, max_bytes: int) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``, never past the high watermark."""
        return self.log.read(offset, max_bytes, upper_bound_offset=self.high_watermark)

    def _maybe_advance_high_watermark(self) -> None:
        if self.isr == [self.broker_id] and self.log.log_end_offset > self.high_watermark:
            self.high_watermark = self.log.log_end_offset
            self._wake_waiters()

    # -- long-poll support for Fetch --------------------------------------------------------
    def add_waiter(self, waiter: asyncio.Future) -> None:
        self._waiters.append(waiter)

    def remove_waiter(self, waiter: asyncio.Future) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def status(self) -> dict:
        return {"log_start_offset": self.log.log_start_offset,
                "log_end_offset": self.log.log_end_offset,
                "high_watermark": self.high_watermark,
                "leader_epoch": self.leader_epoch}
