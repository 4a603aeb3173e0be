"""Share sessions (KIP-932, Kafka's ShareSessionCache): one per share group member on each
partition leader it fetches from, holding the partitions it fetches. ShareSessionEpoch 0
opens one (replacing any the member had), -1 closes it, and every other request carries the
epoch after the last one: anything else is INVALID_SHARE_SESSION_EPOCH, and a member
without a session is told SHARE_SESSION_NOT_FOUND.

The cache holds group.share.max.share.sessions sessions. Kafka drops a member's session when
its connection closes; here a full cache makes room by evicting its least recently used
session if that one has been idle for ``idle_eviction_s`` (a member that went away without
closing it), and refuses a new one otherwise (SHARE_SESSION_LIMIT_REACHED)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka.errors import InvalidShareSessionEpochError, KafkaError, ShareSessionNotFoundError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

TopicPartition = tuple[str, int]


class ShareSessionLimitReachedError(KafkaError):
    """SHARE_SESSION_LIMIT_REACHED: the broker holds group.share.max.share.sessions already."""

    errno = 133
    message = "SHARE_SESSION_LIMIT_REACHED"
    description = "The limit of share sessions has been reached."
    retriable = True


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: set[TopicPartition] = field(default_factory=set)
    last_used_s: float = 0.0


class ShareSessionCache:
    def __init__(
        self, max_sessions: int, idle_eviction_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_eviction_s = idle_eviction_s
        self._clock = clock
        self._sessions: OrderedDict[tuple[str, str], ShareSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def open(self, group_id: str, member_id: str) -> tuple[ShareSession, ShareSession | None]:
        """A new session for the member (epoch 0); returns it and the one it replaces."""
        key = (group_id, member_id)
        replaced = self._sessions.pop(key, None)
        now = self._clock()
        if len(self._sessions) >= self.max_sessions:
            oldest_key, oldest = next(iter(self._sessions.items()))
            if now - oldest.last_used_s >= self.idle_eviction_s:
                del self._sessions[oldest_key]
        if len(self._sessions) >= self.max_sessions:
            raise ShareSessionLimitReachedError(
                f"The share session cache is full ({self.max_sessions} sessions)"
            )
        session = ShareSession(group_id, member_id, last_used_s=now)
        self._sessions[key] = session
        return session, replaced

    def use(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The member's session for a request at ``epoch`` (not 0); a -1 finds it without
        advancing it (the caller closes it once the request is done)."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionNotFoundError(
                f"Share session not found for member {member_id} of group {group_id}"
            )
        if epoch == FINAL_EPOCH:
            return session
        if epoch != session.epoch:
            raise InvalidShareSessionEpochError(
                f"The share session epoch {epoch} does not match the expected epoch {session.epoch}"
            )
        session.epoch = session.epoch + 1 if session.epoch < 2**31 - 1 else 1
        session.last_used_s = self._clock()
        self._sessions.move_to_end((group_id, member_id))
        return session

    def has_sessions_of(self, group_id: str) -> bool:
        """Whether any member of the group has a share session here."""
        return any(key[0] == group_id for key in self._sessions)

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)
