"""Share sessions (KIP-932, Kafka's ShareSessionCache): one per share group member on each
partition leader it fetches from, holding the partitions it fetches. ShareSessionEpoch 0
opens one (replacing any the member had), -1 closes it, and every other request carries the
epoch after the last one: anything else is INVALID_SHARE_SESSION_EPOCH, and a member
without a session is told SHARE_SESSION_NOT_FOUND."""

from __future__ import annotations

from collections import OrderedDict
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


class ShareSessionCache:
    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[tuple[str, str], ShareSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def open(self, group_id: str, member_id: str) -> tuple[ShareSession, ShareSession | None]:
        """A new session for the member (epoch 0); returns it and the one it replaces."""
        key = (group_id, member_id)
        replaced = self._sessions.pop(key, None)
        if len(self._sessions) >= self.max_sessions:
            raise ShareSessionLimitReachedError(
                f"The share session cache is full ({self.max_sessions} sessions)"
            )
        session = ShareSession(group_id, member_id)
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
        self._sessions.move_to_end((group_id, member_id))
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)
