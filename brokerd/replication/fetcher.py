"""Replica fetchers: a follower copies its leader's log with Fetch requests, as Kafka's do.

One fetcher per leader broker serves every partition this broker follows from that leader.
Before its first fetch at a new leader epoch a partition asks the leader where its own latest
epoch ended (OffsetForLeaderEpoch) and truncates anything after that point: a tail written
by a deposed leader that never reached the in-sync replicas is removed, not served.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from kafka.errors import OffsetOutOfRangeError
from kafka.protocol.api_key import ApiKey

from brokerd.partition import Partition
from brokerd.ports import BrokerClientFactory, TopicPartition
from brokerd.protocol.codec import MalformedRequest
from brokerd.replication.broker_client import BrokerClient
from brokerd.replication.fetch_session_handler import FetchSessionHandler
from brokerd.security.inter_broker import InterBrokerAuthenticationError

log = logging.getLogger(__name__)

FETCH_VERSION = 11
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
FETCH_MAX_WAIT_MS = 500
FETCH_MAX_BYTES = 16 * 1024 * 1024
PARTITION_MAX_BYTES = 4 * 1024 * 1024
REQUEST_TIMEOUT_S = 3.0
RETRY_BACKOFF_S = 0.1
UNDEFINED_EPOCH = -1
THROTTLE_SLICE_S = 0.25  # a throttled fetcher asks for this many seconds' worth of bytes
NETWORK_ERRORS = (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, MalformedRequest)


class ReplicaFetcher:
    """Kafka's ReplicaFetcherThread: follows every partition this broker (``broker_id``, the
    replica id of its requests) follows from one leader, through a connection ``clients``
    opens; ``throttle_bytes_per_s`` says how fast it may copy (None: as fast as it can)."""

    def __init__(
        self,
        broker_id: int,
        leader_id: int,
        clients: BrokerClientFactory,
        throttle_bytes_per_s: Callable[[], int | None],
    ) -> None:
        self.broker_id = broker_id
        self.leader_id = leader_id
        self.clients = clients
        self.throttle_bytes_per_s = throttle_bytes_per_s
        self.partitions: dict[TopicPartition, Partition] = {}
        self._needs_truncation: set[TopicPartition] = set()
        # partitions whose fetch entry may differ from what the leader's session holds: only
        # these are looked at when the next incremental fetch is built
        self._changed: set[TopicPartition] = set()
        self._max_bytes: int | None = None  # the partition_max_bytes last asked for
        self._client: BrokerClient | None = None
        self._session = FetchSessionHandler()
        self._assigned = asyncio.Event()
        self._task: asyncio.Task | None = None

    def assign(self, partitions: dict[TopicPartition, Partition], fresh: set[TopicPartition]) -> None:
        """Follow exactly ``partitions``; those in ``fresh`` just got a new leader epoch."""
        self._changed |= {k for k, p in partitions.items() if self.partitions.get(k) is not p}
        self._changed |= self.partitions.keys() - partitions.keys()
        self._changed |= fresh
        self.partitions = dict(partitions)
        self._needs_truncation = (self._needs_truncation | fresh) & set(partitions)
        if partitions:
            self._assigned.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"fetcher-{self.leader_id}")

    async def stop(self) -> None:
        """Stop fetching and close the connection to the leader."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._client is not None:
            self._client.close()

    async def _run(self) -> None:
        while True:
            if not self.partitions:
                self._assigned.clear()
                await self._assigned.wait()
            try:
                client = self._connect()
                if client is None:
                    await asyncio.sleep(RETRY_BACKOFF_S)
                    continue
                if self._needs_truncation:
                    await self._truncate(client)
                if not await self._fetch(client):
                    await asyncio.sleep(RETRY_BACKOFF_S)
            except NETWORK_ERRORS as exc:
                log.debug("fetch from broker %d failed: %r", self.leader_id, exc)
                self._session.reset()  # the connection is gone; so may be the session
                await asyncio.sleep(RETRY_BACKOFF_S)
            except InterBrokerAuthenticationError as exc:
                log.warning("cannot fetch from broker %d: %s", self.leader_id, exc)
                await asyncio.sleep(RETRY_BACKOFF_S)
            except Exception:
                log.exception("replica fetcher for leader %d failed; retrying", self.leader_id)
                await asyncio.sleep(RETRY_BACKOFF_S)

    def _connect(self) -> BrokerClient | None:
        if self._client is None:
            self._client = self.clients(self.leader_id, f"replica-{self.broker_id}", REQUEST_TIMEOUT_S)
        return self._client

    # -- truncation (KIP-101 / KIP-279) -----------------------------------------------------
    async def _truncate(self, client: BrokerClient) -> None:
        pending = {k: self.partitions[k] for k in self._needs_truncation if k in self.partitions}
        asks = {k: p for k, p in pending.items() if p.log.latest_epoch is not None}
        for key in set(pending) - set(asks):
            self._needs_truncation.discard(key)  # an empty log has nothing to diverge
            self._changed.add(key)
        if not asks:
            return
        asked_at = {key: p.leader_epoch for key, p in asks.items()}
        response = await client.request(
            ApiKey.OffsetForLeaderEpoch,
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            {
                "replica_id": self.broker_id,
                "topics": _group_by_topic(
                    asks,
                    lambda p: {
                        "partition": p.index,
                        "current_leader_epoch": p.leader_epoch,
                        "leader_epoch": p.log.latest_epoch,
                    },
                ),
            },
        )
        for topic in response.topics:
            for result in topic.partitions:
                key = (topic.topic, result.partition)
                partition = asks.get(key)
                if partition is None or result.error_code != 0:
                    continue  # the leader does not know its epoch yet: ask again next round
                if not self._still_following(key, partition, asked_at[key]):
                    continue  # the answer is for an epoch this replica has left: ask again
                self._truncate_partition(partition, result.leader_epoch, result.end_offset)
                self._needs_truncation.discard(key)
                self._changed.add(key)

    def _still_following(self, key: TopicPartition, partition: Partition, leader_epoch: int) -> bool:
        """Whether ``partition`` still follows this fetcher's leader at the leader epoch an
        OffsetForLeaderEpoch was sent at: an answer that comes back after the partition was
        reassigned, elected leader, or moved to a newer epoch (even of the same leader) is
        not applied, and the truncation a newer epoch needs is not forgotten."""
        return (
            self.partitions.get(key) is partition
            and not partition.is_leader
            and partition.leader_id == self.leader_id
            and partition.leader_epoch == leader_epoch
        )

    @staticmethod
    def _truncate_partition(partition: Partition, leader_epoch: int, end_offset: int) -> None:
        if leader_epoch == UNDEFINED_EPOCH:
            target = partition.high_watermark
        else:
            own_end = partition.log.end_offset_for_epoch(leader_epoch)[1]
            target = min(end_offset, own_end if own_end >= 0 else end_offset)
        partition.truncate_to(target)

    # -- fetching ---------------------------------------------------------------------------
    async def _fetch(self, client: BrokerClient) -> bool:
        """One Fetch round; False when nothing could be fetched (back off before retrying)."""
        if not self.partitions.keys() - self._needs_truncation:
            return False
        throttle = self.throttle_bytes_per_s()
        max_bytes = FETCH_MAX_BYTES if throttle is None else max(1, int(throttle * THROTTLE_SLICE_S))
        session_fields, send = self._session.request(
            *self._fetch_entries(min(PARTITION_MAX_BYTES, max_bytes))
        )
        response = await client.request(
            ApiKey.Fetch,
            FETCH_VERSION,
            {
                "replica_id": self.broker_id,
                "max_wait_ms": FETCH_MAX_WAIT_MS,
                "min_bytes": 1,
                "max_bytes": max_bytes,
                "isolation_level": 0,
                "rack_id": "",
                **session_fields,
                "topics": _group_by_topic(send, lambda entry: entry),
            },
            extra_timeout_s=FETCH_MAX_WAIT_MS / 1000,
        )
        if not self._session.handle_response(response.error_code, response.session_id):
            return False
        progressed = False
        copied = 0
        for topic in response.responses:
            for data in topic.partitions:
                key = (topic.topic, data.partition_index)
                partition = self.partitions.get(key)
                if partition is not None and self._apply(partition, data):
                    self._changed.add(key)
                    progressed = True
                    copied += len(data.records or b"")
        if throttle is not None:
            await asyncio.sleep(copied / throttle)  # at most `throttle` bytes a second, on average
        return progressed

    def _fetch_entries(self, partition_max_bytes: int) -> tuple[dict, set]:
        """The fetch entries the next request may carry, and the partitions no longer fetched.
        An incremental fetch needs only the partitions that changed since the last one (data
        applied, truncated, reassigned); a full one, or a new byte budget, needs them all."""
        full = self._session.needs_full_request or partition_max_bytes != self._max_bytes
        self._max_bytes = partition_max_bytes
        keys, self._changed = (self.partitions.keys() if full else self._changed), set()
        entries = {
            key: {
                "partition": p.index,
                "current_leader_epoch": p.leader_epoch,
                "fetch_offset": p.log.log_end_offset,
                "log_start_offset": p.log.log_start_offset,
                "partition_max_bytes": partition_max_bytes,
            }
            for key in keys
            if (p := self.partitions.get(key)) is not None and key not in self._needs_truncation
        }
        return entries, {key for key in keys if key not in entries}

    def _apply(self, partition: Partition, data) -> bool:
        key = (partition.topic, partition.index)
        if partition.leader_id != self.leader_id or key in self._needs_truncation:
            return False  # it moved, or got a new leader epoch, while the fetch was in flight
        if data.error_code == OffsetOutOfRangeError.errno:
            self._needs_truncation.add((partition.topic, partition.index))
            if partition.log.log_end_offset < data.log_start_offset:
                partition.log.truncate_fully_and_start_at(data.log_start_offset)
            return True
        if data.error_code != 0:
            return False  # not the leader any more, or not yet: metadata will tell
        partition.append_as_follower(data.records, data.high_watermark, data.log_start_offset)
        return True


def _group_by_topic(partitions: Mapping[TopicPartition, object], entry) -> list[dict]:
    """The request shape both Fetch and OffsetForLeaderEpoch use: topics, then partitions."""
    grouped: dict[str, list] = {}
    for (topic, _), partition in partitions.items():
        grouped.setdefault(topic, []).append(entry(partition))
    return [{"topic": topic, "partitions": entries} for topic, entries in grouped.items()]
