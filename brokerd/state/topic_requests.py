"""The topic-request queue, `topic_requests.json`: topics a client asked a broker that is not
the controller to auto-create (auto.create.topics.enable). Only the controller creates
topics, so the broker leaves the name here and the controller takes the queue on its round,
as a ZooKeeper-mode broker would forward CreateTopics to the controller."""

from __future__ import annotations

from brokerd.state.directory import StateDirectory, read_json, write_json

TOPIC_REQUESTS = "topic_requests.json"


class TopicRequests(StateDirectory):
    def request_topic_creation(self, name: str) -> None:
        """A non-controller broker asks the controller to auto-create a topic."""
        with self.write_lock():
            pending = set(read_json(self.dir / TOPIC_REQUESTS, []))
            if name not in pending:
                write_json(self.dir / TOPIC_REQUESTS, sorted(pending | {name}))

    def take_topic_requests(self) -> list[str]:
        """The controller empties the queue: the names asked for since its last take."""
        path = self.dir / TOPIC_REQUESTS
        if not path.exists():
            return []  # the common case, answered without taking the lock
        with self.write_lock():
            pending: list[str] = read_json(path, [])
            path.unlink(missing_ok=True)
        return pending
