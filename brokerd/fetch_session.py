"""Incremental fetch sessions (KIP-227): Kafka's FetchSession, FetchSessionCache and FetchManager.

A consumer fetching the same partitions over and over need not list them all in every request,
nor read them all back in every response. Its first (full) fetch, at session epoch 0, makes the
broker remember the partitions and their fetch parameters under a new session id; each later
(incremental) fetch, at the next session epoch, names only partitions it adds or changes and
those it forgets, and the response carries only partitions with something new: records, a moved
high watermark, last stable offset or log start, or an error.

Sessions live in a bounded cache (``max.incremental.fetch.session.cache.slots``). As in Kafka,
a full cache gives way to a new session only by evicting the least recently used session once
it has been idle for ``min.incremental.fetch.session.eviction.ms``, or a session smaller than
the new one that is older than that; otherwise the new fetch simply stays sessionless, so
consumers never push each other out in a loop.
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple, Protocol

from kafka.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError

from brokerd.waiters import Waiters

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0  # a full fetch that asks for a (new) session
FINAL_EPOCH = -1  # a full fetch that wants no session
MAX_EPOCH = 2**31 - 1
NO_ERROR = 0


class PartitionFetch(Protocol):
    """What a fetch reads of one partition: a Fetch request's partition, or a session's
    CachedPartition standing in for it."""

    partition: int
    fetch_offset: int
    log_start_offset: int
    partition_max_bytes: int
    current_leader_epoch: int


# (topic, one partition of the request or of the session) to read, in response order
FetchData = list[tuple[str, PartitionFetch]]


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: session epochs count up from 1 and wrap back to 1,
    never to 0 or -1, which mean a full fetch."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


def _now_ms() -> float:
    return time.monotonic() * 1000


class CachedPartition:
    """One partition of a session: the fetcher's latest request parameters (so an incremental
    fetch need not repeat them) and what the last response told it (so an unchanged partition
    can be left out). Its attribute names are those of a Fetch request's partition, so the
    fetch path reads it like one."""

    __slots__ = (
        "topic",
        "partition",
        "fetch_offset",
        "log_start_offset",
        "partition_max_bytes",
        "current_leader_epoch",
        "high_watermark",
        "last_stable_offset",
        "local_log_start_offset",
        "seen_changes",
    )

    def __init__(self, topic: str, request) -> None:
        self.topic = topic
        self.partition = request.partition
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.local_log_start_offset = -1
        self.seen_changes = -1  # the partition's change count when it was last read in full
        self.update_request(request)

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    def update_request(self, request) -> None:
        self.seen_changes = -1
        self.fetch_offset = request.fetch_offset
        self.log_start_offset = request.log_start_offset
        self.partition_max_bytes = request.partition_max_bytes
        self.current_leader_epoch = request.current_leader_epoch

    def unchanged_response(self) -> dict:
        """The answer an unchanged partition gives: what the last response reported, no
        records, so must_respond leaves it out."""
        return {
            "partition_index": self.partition,
            "error_code": NO_ERROR,
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "log_start_offset": self.local_log_start_offset,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": b"",
        }

    def must_respond(self, response: dict) -> bool:
        """Whether an incremental response must include this partition (Kafka's
        maybeUpdateResponseData), remembering what it reports. An error answers -1 offsets,
        so the partition is sent again once the error is gone."""
        offsets = (response["high_watermark"], response["last_stable_offset"], response["log_start_offset"])
        changed = offsets != (self.high_watermark, self.last_stable_offset, self.local_log_start_offset)
        self.high_watermark, self.last_stable_offset, self.local_log_start_offset = offsets
        return changed or bool(response["records"]) or response["error_code"] != NO_ERROR


class FetchSession:
    """The partitions one fetcher reads and the epoch its next incremental fetch must carry.

    Partitions are read in ``unparked`` order (partitions that just returned records move to
    the back, so a response's max_bytes budget goes round them all). A follower's session
    parks a partition it found idle (nothing changed since the follower's last full read, the
    follower at the log end and in sync): later fetches skip it, and the leader counts the
    follower as caught up on it as of ``last_fetch_ms``, until the partition changes and
    unparks it. An idle follower then costs its leader nothing per partition and fetch, so
    idle brokers stay idle however many partitions they host. Consumers' sessions never park.
    """

    def __init__(
        self, session_id: int, privileged: bool, partitions: list[CachedPartition], now_ms: float
    ) -> None:
        self.id = session_id
        self.privileged = privileged
        self.partitions: dict[tuple[str, int], CachedPartition] = {p.key: p for p in partitions}
        self.unparked: OrderedDict[tuple[str, int], None] = OrderedDict.fromkeys(self.partitions)
        self.parked: set[tuple[str, int]] = set()
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.created_ms = now_ms
        self.last_used_ms = now_ms
        self.last_fetch_ms = 0  # wall-clock ms of the latest incremental fetch, as partitions count time
        self.waiters = Waiters()  # a long-polled fetch, woken when a parked partition changes

    def update(self, topics, forgotten_topics) -> None:
        """Add or update the request's partitions (a partition named again is read again),
        then drop the forgotten ones."""
        for topic in topics:
            for request in topic.partitions:
                cached = self.partitions.get((topic.topic, request.partition))
                if cached is None:
                    cached = CachedPartition(topic.topic, request)
                    self.partitions[cached.key] = cached
                else:
                    cached.update_request(request)
                self.parked.discard(cached.key)
                self.unparked[cached.key] = None
        for topic in forgotten_topics:
            for index in topic.partitions:
                key = (topic.topic, index)
                self.partitions.pop(key, None)
                self.unparked.pop(key, None)
                self.parked.discard(key)

    def fetch_data(self) -> list[tuple[str, CachedPartition]]:
        """What a fetch reads now: every partition that is not parked."""
        return [(key[0], self.partitions[key]) for key in self.unparked]

    def rotate(self, key: tuple[str, int]) -> None:
        self.unparked.move_to_end(key)

    def park(self, key: tuple[str, int]) -> None:
        self.unparked.pop(key, None)
        self.parked.add(key)

    def is_parked(self, key: tuple[str, int]) -> bool:
        return key in self.parked

    def unpark(self, key: tuple[str, int]) -> None:
        """The partition changed: read it again, and wake a fetch long-polling meanwhile."""
        if key not in self.parked:
            return
        self.parked.discard(key)
        self.unparked[key] = None
        self.waiters.wake()

    def eviction_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: unprivileged (consumer) sessions go before followers',
        smaller before bigger."""
        return self.privileged, len(self.partitions), self.id


class FetchSessionCache:
    """The sessions of one broker, least recently used first."""

    def __init__(self, max_entries: int, eviction_ms: int, clock: Callable[[], float] = _now_ms) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.clock = clock
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self._sessions.pop(session_id, None)

    def touch(self, session: FetchSession) -> None:
        session.last_used_ms = self.clock()
        self._sessions.move_to_end(session.id)

    def maybe_create(self, privileged: bool, partitions: list[CachedPartition]) -> int:
        """A new session's id, or INVALID_SESSION_ID when the cache is full and nothing in it
        may be evicted for this session."""
        now = self.clock()
        if len(self._sessions) >= self.max_entries and not self._try_evict(privileged, len(partitions), now):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_session_id(), privileged, partitions, now)
        self._sessions[session.id] = session
        return session.id

    def _try_evict(self, privileged: bool, size: int, now: float) -> bool:
        """Kafka's tryEvict: the least recently used session goes if it has been idle for
        eviction_ms; failing that, the least valuable session older than eviction_ms goes if
        the new one is worth more (privileged, or more partitions). Consumers' sessions are
        always fair game for followers."""
        if not self._sessions:
            return False
        oldest = next(iter(self._sessions.values()))
        if now - oldest.last_used_ms > self.eviction_ms:
            del self._sessions[oldest.id]
            return True
        candidates = [
            s
            for s in self._sessions.values()
            if now - s.created_ms > self.eviction_ms or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession.eviction_key)
        if (privileged, size, INVALID_SESSION_ID) < victim.eviction_key():
            return False
        del self._sessions[victim.id]
        return True

    def _new_session_id(self) -> int:
        while True:
            session_id = random.randint(1, MAX_EPOCH)
            if session_id not in self._sessions:
                return session_id


class FetchResult(NamedTuple):
    session_id: int
    error_code: int
    responses: list[tuple[str, dict]]  # (topic, partition response), in response order


class _RequestFetchContext:
    """A fetch that reads what its request names: the same partitions on every pass of a
    long poll, and no session to wake it."""

    session: FetchSession | None = None

    def reread(self) -> None:
        pass


class SessionlessFetchContext(_RequestFetchContext):
    """A fetch outside any session: every requested partition is read and answered."""

    def __init__(self, fetch_data: FetchData) -> None:
        self.fetch_data = fetch_data

    def respond(self, responses: list[dict]) -> FetchResult:
        return FetchResult(INVALID_SESSION_ID, NO_ERROR, _with_topics(self.fetch_data, responses))


class SessionErrorContext(_RequestFetchContext):
    """An incremental fetch of an unknown session or at the wrong epoch: nothing is read, as
    the broker cannot tell which partitions the fetcher means."""

    fetch_data: FetchData = []

    def __init__(self, error_code: int) -> None:
        self.error_code = error_code

    def respond(self, responses: list[dict]) -> FetchResult:
        return FetchResult(INVALID_SESSION_ID, self.error_code, [])


class FullFetchContext(_RequestFetchContext):
    """A full fetch at epoch 0: every requested partition is answered, and a session is created
    with what the response told the fetcher."""

    def __init__(self, cache: FetchSessionCache, fetch_data: FetchData, privileged: bool) -> None:
        self.cache = cache
        self.fetch_data = fetch_data
        self.privileged = privileged

    def respond(self, responses: list[dict]) -> FetchResult:
        partitions = []
        for (topic, request), response in zip(self.fetch_data, responses):
            cached = CachedPartition(topic, request)
            cached.must_respond(response)
            partitions.append(cached)
        session_id = self.cache.maybe_create(self.privileged, partitions)
        return FetchResult(session_id, NO_ERROR, _with_topics(self.fetch_data, responses))


class IncrementalFetchContext:
    """A fetch at the session's next epoch: every partition of the session that is not
    parked is read (so a long poll still waits on all of them; a parked one wakes it by
    unparking), only the changed ones are answered."""

    def __init__(self, session: FetchSession, request_epoch: int) -> None:
        self.session = session
        self.request_epoch = request_epoch
        session.last_fetch_ms = int(time.time() * 1000)
        self.fetch_data = session.fetch_data()

    def reread(self) -> None:
        """A long poll reads again: partitions unparked meanwhile are read too."""
        self.fetch_data = self.session.fetch_data()

    def respond(self, responses: list[dict]) -> FetchResult:
        """Kafka checks the epoch again here: another fetch at the same epoch (a client
        retrying while this one long-polled) has moved the session on."""
        session = self.session
        if session.epoch != next_epoch(self.request_epoch):
            return FetchResult(session.id, InvalidFetchSessionEpochError.errno, [])
        changed = []
        for (topic, cached), response in zip(self.fetch_data, responses):
            if cached.must_respond(response):
                changed.append((topic, response))
                if response["records"] and cached.key in session.unparked:
                    session.rotate(cached.key)
        return FetchResult(session.id, NO_ERROR, changed)


FetchContext = SessionlessFetchContext | SessionErrorContext | FullFetchContext | IncrementalFetchContext


class FetchManager:
    """Kafka's FetchManager: what a Fetch request's session id and epoch ask for."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self.cache = cache

    def new_context(self, body) -> FetchContext:
        """A full fetch (epoch 0 or -1) closes the session it names; epoch 0 then opens a new
        one, -1 stays sessionless. An incremental fetch must name a cached session at its
        expected epoch; one that leaves the session empty closes it."""
        request_data = [(topic.topic, p) for topic in body.topics for p in topic.partitions]
        if body.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if body.session_id != INVALID_SESSION_ID:
                self.cache.remove(body.session_id)
            if body.session_epoch == FINAL_EPOCH:
                return SessionlessFetchContext(request_data)
            return FullFetchContext(self.cache, request_data, privileged=body.replica_id >= 0)
        session = self.cache.get(body.session_id)
        if session is None:
            return SessionErrorContext(FetchSessionIdNotFoundError.errno)
        if session.epoch != body.session_epoch:
            return SessionErrorContext(InvalidFetchSessionEpochError.errno)
        session.update(body.topics, body.forgotten_topics_data)
        if not session.partitions:
            self.cache.remove(session.id)
            return SessionlessFetchContext(request_data)
        self.cache.touch(session)
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(session, body.session_epoch)


def _with_topics(fetch_data: FetchData, responses: list[dict]) -> list[tuple[str, dict]]:
    return [(topic, response) for (topic, _), response in zip(fetch_data, responses)]
