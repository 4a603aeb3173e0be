"""One broker in this process, answering frames one at a time as a connection would, and the
fuzzer's verdict on each answer: a frame may be answered (any Kafka error inside) or refused
(the connection closed), but never raise anything else, log an internal error, allocate more
than MAX_PEAK_BYTES or spend more than MAX_CPU_S of processor time."""

from __future__ import annotations

import asyncio
import logging
import time
import tracemalloc
from pathlib import Path

from brokerd.broker import Broker
from brokerd.config import BrokerConfig
from brokerd.protocol.codec import MalformedRequest
from brokerd.security.authenticator import ConnectionRefused
from brokerd.state import ClusterState
from tests.cluster_harness import free_port

MAX_CPU_S = 1.0
MAX_PEAK_BYTES = 64 * 1024 * 1024
# A handler may wait (a Fetch's max_wait_ms, a JoinGroup for its rebalance); waiting costs no
# processor time, so the wait is cut here and only MAX_CPU_S is held against it.
MAX_WAIT_S = 0.2
OVERRIDES = {
    # Making a partition's log costs ~0.7 ms of processor time, on the event loop: 8,000 new
    # partitions (under the default limit of 10,000) hold it for 6 s. The fuzzer checks that
    # the limit holds, so it runs with one that a single request can fill within MAX_CPU_S.
    "max.broker.partitions": "500",
    # A partition's active segment is a sparse file of segment.bytes mapped whole when first
    # written (1 GiB by default): under the fuzzer's 4 GiB address-space cap, the fourth
    # partition a mutated Produce wrote to failed to map, and the process exited.
    "log.segment.bytes": str(1024 * 1024),
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "share.auto.offset.reset": "earliest",
}


class FrameFailure(AssertionError):
    """What a frame made the broker do that no client may make it do."""


class _InternalErrors(logging.Handler):
    """Collects what brokerd logs at ERROR: an unexpected exception a handler turned into
    UNKNOWN_SERVER_ERROR, or a connection closed after an internal error."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class InProcessBroker:
    """A one-broker cluster in ``cluster_dir`` whose broker runs on this thread's event loop
    only while a frame is answered."""

    def __init__(self, cluster_dir: Path, max_wait_s: float = MAX_WAIT_S) -> None:
        self.max_wait_s = max_wait_s
        port = free_port()
        ClusterState(cluster_dir).initialize({1: port})
        self.loop = asyncio.new_event_loop()
        self.broker = Broker(BrokerConfig(1, cluster_dir, port, overrides=dict(OVERRIDES)))
        self.loop.run_until_complete(self.broker.start())
        self.server = self.broker.servers[0]
        self.errors = _InternalErrors()
        logging.getLogger("brokerd").addHandler(self.errors)

    def close(self) -> None:
        logging.getLogger("brokerd").removeHandler(self.errors)
        self.loop.run_until_complete(self.broker.stop())
        self.loop.close()

    async def _answer(self, frame: bytes) -> bytes | None:
        """The bytes a connection would get back; None when it would be closed or get nothing."""
        auth = self.server.authenticators(self.server.listener, "127.0.0.1", None)
        try:
            response, _, _ = await asyncio.wait_for(self.server.respond(frame, auth), self.max_wait_s)
        except (MalformedRequest, ConnectionRefused, TimeoutError):
            return None
        return None if response is None else bytes(response)

    def answer(self, frame: bytes) -> bytes | None:
        """Answer one frame (without its size prefix); raise FrameFailure when the broker
        misbehaved on it."""
        self.errors.records.clear()
        tracemalloc.reset_peak()
        started = time.process_time()
        try:
            response = self.loop.run_until_complete(self._answer(frame))
        except Exception as exc:
            raise FrameFailure(f"raised {exc!r} on frame {frame.hex()}") from exc
        cpu_s = time.process_time() - started
        peak = tracemalloc.get_traced_memory()[1]
        if self.errors.records:
            logged = logging.Formatter().format(self.errors.records[0])  # with its traceback
            raise FrameFailure(f"logged {logged} on frame {frame.hex()}")
        if cpu_s > MAX_CPU_S:
            raise FrameFailure(f"took {cpu_s:.2f} s of processor time on frame {frame.hex()}")
        if peak > MAX_PEAK_BYTES:
            raise FrameFailure(f"allocated {peak >> 20} MiB at peak on frame {frame.hex()}")
        return response
