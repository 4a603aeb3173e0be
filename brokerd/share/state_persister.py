"""Writing and reading share-partition state in __share_group_state, over the wire to the
leader of the state partition (Kafka's persister, with Produce and Fetch in place of its
Write/ReadShareGroupState): a write is acknowledged by every in-sync replica (acks=all)
before the share partition answers the acknowledgement that caused it, so a new leader of
the data partition, on any broker, reads back every acknowledgement.

A read goes up to the state partition's latest offset as ListOffsets gives it; a leader that
just took over answers OFFSET_NOT_AVAILABLE until its high watermark covers what the old
one confirmed (KIP-207), so a read never stops short of a confirmed write.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from kafka.errors import FencedLeaderEpochError, for_code
from kafka.protocol.api_key import ApiKey
from kafka.record.memory_records import MemoryRecords

from brokerd.coordinator.records import build_batch, partition_for
from brokerd.ports import BrokerClientFactory, MetadataView
from brokerd.replication.broker_client import BrokerClient
from brokerd.share.share_state import SHARE_STATE_TOPIC, ShareKey, ShareState

log = logging.getLogger(__name__)

PRODUCE_VERSION = 8
FETCH_VERSION = 11
LIST_OFFSETS_VERSION = 4
LATEST = -1
READ_BYTES = 4 * 1024 * 1024
RETRY_S = 0.2
REQUEST_TIMEOUT_S = 15.0
# retried: the state partition's leader is moving or catching up
RETRIABLE = frozenset(
    {3, 5, 6, 7, 13, 15, 19, 20, 45, 74, 75}
)  # UNKNOWN_TOPIC_OR_PARTITION ... OFFSET_NOT_AVAILABLE
# a write's FENCED_LEADER_EPOCH is the state partition's leader refusing a stale snapshot
# (share_state_epochs), not a moving leader: retrying cannot help
WRITE_RETRIABLE = RETRIABLE - {FencedLeaderEpochError.errno}


class StatePersister(Protocol):
    """Where share partitions keep their state."""

    async def read(self, key: ShareKey) -> ShareState | None: ...

    async def write(self, key: ShareKey, state: ShareState) -> None:
        """Persist the snapshot; FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH when a newer
        snapshot of the share partition is already persisted (nothing is written then)."""
        ...

    async def read_group(self, group_id: str) -> dict[ShareKey, ShareState]:
        """The latest state of every share partition of the group."""
        ...


class ShareStateTopic:
    """The StatePersister over __share_group_state."""

    def __init__(
        self,
        num_partitions: int,
        metadata: MetadataView,
        clients: BrokerClientFactory,
        create_topic: Callable[[str], object],
        timeout_s: float = 30.0,
    ) -> None:
        self.num_partitions = num_partitions
        self._metadata = metadata
        self._clients = clients
        self._create_topic = create_topic
        self._timeout_s = timeout_s
        self._connections: dict[int, BrokerClient] = {}

    def partition_of(self, key: ShareKey) -> int:
        return partition_for(key.hash_key, self.num_partitions)

    async def write(self, key: ShareKey, state: ShareState) -> None:
        batch = build_batch([(key.encode(), state.encode())])
        partition = self.partition_of(key)
        fields = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": int(REQUEST_TIMEOUT_S * 1000),
            "topic_data": [
                {"name": SHARE_STATE_TOPIC, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }

        def error_of(response) -> int:
            return response.responses[0].partition_responses[0].error_code

        await self._until_done(partition, ApiKey.Produce, PRODUCE_VERSION, fields, error_of, WRITE_RETRIABLE)

    async def read(self, key: ShareKey) -> ShareState | None:
        """The latest snapshot of ``key`` (of the newest leader epoch), or None."""
        wanted = key.encode()
        return (await self._scan(self.partition_of(key), lambda raw: raw == wanted)).get(wanted)

    async def read_group(self, group_id: str) -> dict[ShareKey, ShareState]:
        """The latest snapshot of every share partition of the group, from every state
        partition (what DescribeShareGroupOffsets answers when no topics are named)."""
        scans = await asyncio.gather(
            *(self._scan(p, lambda raw: _group_of(raw) == group_id) for p in range(self.num_partitions))
        )
        states = {}
        for found in scans:
            for raw, state in found.items():
                key = ShareKey.decode(raw)
                if key is not None and state is not None:
                    states[key] = state
        return states

    async def _scan(self, partition: int, wanted: Callable[[bytes], bool]) -> dict[bytes, ShareState | None]:
        """The latest snapshot of each wanted key in the state partition (None: deleted)."""
        end = await self._offset(partition, LATEST)
        offset = 0
        latest: dict[bytes, ShareState | None] = {}
        while offset < end:
            records = await self._fetch(partition, offset)
            last = offset - 1
            batches = MemoryRecords(records)
            while batches.has_next():
                batch = batches.next_batch()
                for record in batch:
                    last = max(last, record.offset)
                    if batch.is_control_batch or record.key is None or not wanted(record.key):
                        continue
                    if record.value is None:
                        latest[record.key] = None
                        continue
                    try:
                        state = ShareState.decode(record.value)
                    except (ValueError, KeyError, TypeError) as exc:  # not written by a broker
                        log.warning(
                            "%s-%d: unreadable share state at %d: %r",
                            SHARE_STATE_TOPIC,
                            partition,
                            record.offset,
                            exc,
                        )
                        continue
                    if state.supersedes(latest.get(record.key)):
                        latest[record.key] = state
            if last < offset:
                break  # nothing more to read below the end: a gap at the tail
            offset = last + 1
        return latest

    async def _offset(self, partition: int, timestamp: int) -> int:
        fields = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": SHARE_STATE_TOPIC,
                    "partitions": [
                        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}
                    ],
                }
            ],
        }
        response = await self._until_done(
            partition,
            ApiKey.ListOffsets,
            LIST_OFFSETS_VERSION,
            fields,
            lambda r: r.topics[0].partitions[0].error_code,
        )
        return int(response.topics[0].partitions[0].offset)

    async def _fetch(self, partition: int, offset: int) -> bytes:
        fields = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": READ_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": SHARE_STATE_TOPIC,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "log_start_offset": -1,
                            "partition_max_bytes": READ_BYTES,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        response = await self._until_done(
            partition,
            ApiKey.Fetch,
            FETCH_VERSION,
            fields,
            lambda r: r.error_code or r.responses[0].partitions[0].error_code,
        )
        return bytes(response.responses[0].partitions[0].records or b"")

    async def _until_done(
        self,
        partition: int,
        api_key: int,
        version: int,
        fields: dict,
        error_of: Callable[[Any], int],
        retriable: frozenset[int] = RETRIABLE,
    ) -> Any:
        """Send to the state partition's leader until it answers without error; a moving
        leader, a topic not there yet or a broken connection (``retriable``) are retried,
        within the timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        last_error: Exception | None = None
        while loop.time() < deadline:
            leader = self._leader(partition)
            client = self._client(leader) if leader is not None else None
            if client is not None:
                try:
                    response = await client.request(api_key, version, fields)
                except (TimeoutError, OSError, ConnectionError) as exc:
                    self._connections.pop(leader, None)  # type: ignore[arg-type]
                    last_error = exc
                else:
                    code = error_of(response)
                    if code == 0:
                        return response
                    last_error = for_code(code)(f"{SHARE_STATE_TOPIC}-{partition}")
                    if code not in retriable:
                        raise last_error
            await asyncio.sleep(RETRY_S)
            self._metadata.refresh()
        raise last_error or TimeoutError(f"{SHARE_STATE_TOPIC}-{partition} has no leader")

    def _leader(self, partition: int) -> int | None:
        if not self._metadata.has_topic(SHARE_STATE_TOPIC):
            self._create_topic(SHARE_STATE_TOPIC)
            return None
        leader = self._metadata.partition_leader(SHARE_STATE_TOPIC, partition)
        return leader if leader is not None and leader >= 0 else None

    def _client(self, broker_id: int) -> BrokerClient | None:
        client = self._connections.get(broker_id)
        if client is None:
            client = self._clients(broker_id, "share-state-persister", REQUEST_TIMEOUT_S)
            if client is not None:
                self._connections[broker_id] = client
        return client


def _group_of(raw: bytes) -> str | None:
    key = ShareKey.decode(raw)
    return None if key is None else key.group_id
