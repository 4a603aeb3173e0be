"""Consumer groups for `kctl watch`, fetched over the Kafka protocol in the background.

Groups live in their coordinator's memory, not in the state directory, so they need requests;
a killed or paused coordinator makes those wait for the timeout. A background thread keeps
that wait away from the dashboard: brokers and partitions refresh on time, and the group
tables show their last answer (or why there is none) until the next one arrives.
"""

from __future__ import annotations

from collections.abc import Callable

from kctl.kafka import groups
from kctl.kafka.client import Connection
from kctl.shell.errors import KctlError
from kctl.watch.poller import Poller

# Each group described costs a few requests per fetch; past this many, the watch shows the
# first ones (by id) and says how many it left out. Name groups with --group to pick them.
MAX_GROUPS = 12


class GroupSource:
    """Describes the named groups, or every group (consuming `topic`, if given)."""

    def __init__(self, connect: Callable[[], Connection], names: list[str], topic: str | None):
        self._connect = connect
        self._conn: Connection | None = None
        self.names = names
        self.topic = topic

    def fetch(self) -> list[dict]:
        """One document per group; a group that cannot be described says why instead."""
        conn = self._connection()
        ids = self.names or groups.group_ids(conn)
        docs = []
        for group_id in ids if self.names else ids[:MAX_GROUPS]:
            try:
                doc = groups.describe(conn, group_id)
            except KctlError as exc:
                doc = {"group": group_id, "error": exc.message}
            if self.names or self._reads_topic(doc):
                docs.append(doc)
        if not self.names and len(ids) > MAX_GROUPS:
            docs.append(
                {
                    "group": f"(+{len(ids) - MAX_GROUPS} more)",
                    "error": "not described: name groups with --group",
                }
            )
        return docs

    def _connection(self) -> Connection:
        # Connecting needs a live broker; retried at every fetch until one answers.
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _reads_topic(self, doc: dict) -> bool:
        return self.topic is None or any(p["topic"] == self.topic for p in doc.get("partitions", []))


class GroupPoller(Poller[tuple[list[dict], str | None]]):
    """Fetches groups every `interval` seconds on a daemon thread; read `latest` any time."""

    def __init__(self, source: GroupSource, interval: float):
        super().__init__(([], "waiting for the first answer"), interval, "kctl-watch-groups")
        self.source = source

    def poll(self) -> tuple[list[dict], str | None]:
        docs, error = poll_once(self.source)
        return (docs if error is None else self.latest[0], error)


def poll_once(source: GroupSource) -> tuple[list[dict], str | None]:
    """(groups, None), or ([], why not)."""
    try:
        return source.fetch(), None
    except KctlError as exc:
        return [], exc.message
