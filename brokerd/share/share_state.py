"""A share partition's persisted state and its records in __share_group_state (Kafka keeps
the same facts there through its share coordinator: ShareSnapshot records).

One record per share partition, keyed by group, topic id and partition (a topic deleted and
created again under its name starts afresh), its value the whole snapshot: the SPSO, the
leader epoch of the leader that wrote it, and the in-flight runs that are not plain
never-delivered records. The topic is compacted, so the latest snapshot of each key stays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from brokerd.share.share_partition import StateBatch

SHARE_STATE_TOPIC = "__share_group_state"
MAX_STATE_BATCHES = 100_000  # bounds what a record read back may hold


@dataclass(frozen=True)
class ShareKey:
    """Which share partition: a group's view of one partition of one topic (by its id)."""

    group_id: str
    topic_id: str  # hex
    partition: int

    def encode(self) -> bytes:
        return json.dumps(["share", self.group_id, self.topic_id, self.partition]).encode()

    @property
    def hash_key(self) -> str:
        """What picks the __share_group_state partition, as Kafka's "group:topicId:partition"."""
        return f"{self.group_id}:{self.topic_id}:{self.partition}"

    @classmethod
    def decode(cls, raw: bytes) -> ShareKey | None:
        try:
            kind, group_id, topic_id, partition = json.loads(raw)
        except (ValueError, TypeError):
            return None
        if kind != "share" or not isinstance(group_id, str) or not isinstance(partition, int):
            return None
        return cls(group_id, str(topic_id), partition)


@dataclass(frozen=True)
class ShareState:
    """What a new leader of the partition starts from."""

    start_offset: int
    leader_epoch: int
    state_batches: tuple[StateBatch, ...] = ()
    # raised by AlterShareGroupOffsets and DeleteShareGroupOffsets: a leader still writing
    # the state it loaded before is then superseded, whatever its leader epoch
    state_epoch: int = 0
    deleted: bool = False  # DeleteShareGroupOffsets: the group starts afresh here

    def encode(self) -> bytes:
        return json.dumps(
            {
                "start_offset": self.start_offset,
                "leader_epoch": self.leader_epoch,
                "state_epoch": self.state_epoch,
                "deleted": self.deleted,
                "state_batches": [
                    [b.first_offset, b.last_offset, b.state, b.delivery_count] for b in self.state_batches
                ],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, raw: bytes) -> ShareState:
        value = json.loads(raw)
        batches = value["state_batches"]
        if len(batches) > MAX_STATE_BATCHES:
            raise ValueError(f"{len(batches)} state batches in one share state record")
        return cls(
            int(value["start_offset"]),
            int(value["leader_epoch"]),
            tuple(StateBatch(int(f), int(last), int(s), int(c)) for f, last, s, c in batches),
            int(value.get("state_epoch", 0)),
            bool(value.get("deleted", False)),
        )

    @property
    def epochs(self) -> tuple[int, int]:
        """(state epoch, leader epoch): what orders two snapshots of one share partition."""
        return self.state_epoch, self.leader_epoch

    def supersedes(self, other: ShareState | None) -> bool:
        """A later record of an older state epoch (written from state loaded before an
        admin reset it), or of a leader at an older epoch (a deposed leader's late write),
        does not replace what is there."""
        return other is None or self.epochs >= other.epochs
