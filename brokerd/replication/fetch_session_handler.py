"""The follower's side of an incremental fetch session (KIP-227; Kafka's FetchSessionHandler).

A follower fetches the same partitions from its leader over and over. In a session it names
only the partitions whose fetch parameters changed since its last request (and those it
stops following), and the leader answers only partitions with something new. An idle
follower's request and response then carry nothing per partition, so their cost no longer
grows with the number of partitions followed.
"""

from __future__ import annotations

from kafka.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError

from brokerd.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

Key = tuple[str, int]
SESSION_ERRORS = (FetchSessionIdNotFoundError.errno, InvalidFetchSessionEpochError.errno)


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._sent: dict[Key, dict] = {}  # what the leader's session holds, as last sent
        self._next: tuple[dict[Key, dict], list[Key]] = ({}, [])  # sent and forgotten, in flight

    @property
    def needs_full_request(self) -> bool:
        """No session: the next request names every partition fetched."""
        return self.session_id == INVALID_SESSION_ID

    def request(self, entries: dict[Key, dict], stopped: set[Key]) -> tuple[dict, dict[Key, dict]]:
        """The session fields and forgotten partitions of the next request, and the partition
        entries it must carry. ``entries`` are every fetched partition's for a full fetch, and
        at least the changed ones' otherwise; ``stopped`` are partitions no longer fetched.
        An incremental fetch carries only entries that differ from what the session holds."""
        if self.needs_full_request:
            send, forgotten = entries, []
        else:
            send = {key: entry for key, entry in entries.items() if self._sent.get(key) != entry}
            forgotten = [key for key in stopped if key in self._sent]
        self._next = (send, forgotten)
        by_topic: dict[str, list[int]] = {}
        for topic, index in forgotten:
            by_topic.setdefault(topic, []).append(index)
        fields = {
            "session_id": self.session_id,
            "session_epoch": self.epoch,
            "forgotten_topics_data": [{"topic": t, "partitions": p} for t, p in by_topic.items()],
        }
        return fields, send

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Advance the session after a response; False when the leader lost or refused the
        session (the next request is a full one, opening a new session)."""
        if error_code in SESSION_ERRORS:
            self.reset()
            return False
        send, forgotten = self._next
        if self.epoch == INITIAL_EPOCH:
            self.session_id = session_id
            self.epoch = next_epoch(INITIAL_EPOCH) if session_id != INVALID_SESSION_ID else INITIAL_EPOCH
            self._sent = dict(send)
        else:
            self.epoch = next_epoch(self.epoch)
            self._sent.update(send)
            for key in forgotten:
                del self._sent[key]
        return True

    def reset(self) -> None:
        """Start over with a full fetch (a new connection, a lost session)."""
        self.session_id, self.epoch, self._sent = INVALID_SESSION_ID, INITIAL_EPOCH, {}
