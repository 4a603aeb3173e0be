"""One partition as the metadata has it: its PartitionRegistration (KRaft's name), which a
PartitionRecord carries into the log and the image holds, and the PartitionChangeBuilder the
controller's rules decide on (KRaft's name too), which builds the next registration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# A controller's reason for a leader move, as views narrate it: for an unclean election
# {"leader_epoch", "isr"} (the ISR it bypassed), for a move back to the preferred leader
# {"leader_epoch", "led", "preferred", "percentage"} (the broker's imbalance that moved it).
Reason = Mapping[str, Any]

# What a PartitionChangeRecord may change: every field but the partition's index.
PARTITION_FIELDS = (
    "replicas",
    "leader",
    "leader_epoch",
    "isr",
    "partition_epoch",
    "adding_replicas",
    "removing_replicas",
    "last_unclean_election",
    "last_leader_rebalance",
)


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """Its lists are never changed: a change is a new registration. A field added later is
    missing from what was written before it, and takes its default."""

    partition: int
    replicas: list[int]
    leader: int = -1
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    partition_epoch: int = 0
    adding_replicas: list[int] = field(default_factory=list)  # an ongoing reassignment's
    removing_replicas: list[int] = field(default_factory=list)
    # the controller's reasons for its last leader moves here
    last_unclean_election: Reason | None = None
    last_leader_rebalance: Reason | None = None

    def changes_from(self, before: PartitionRegistration) -> dict[str, Any]:
        """The fields that differ from ``before`` (a PartitionChangeRecord's payload)."""
        return {
            name: getattr(self, name)
            for name in PARTITION_FIELDS
            if getattr(self, name) != getattr(before, name)
        }

    def to_json(self) -> dict[str, Any]:
        """As the log and its snapshots store it (read back with PartitionRegistration(**doc))."""
        return {"partition": self.partition, **{name: getattr(self, name) for name in PARTITION_FIELDS}}


@dataclass(slots=True)
class PartitionChangeBuilder:
    """A partition being decided on, made from its registration (``of``): the controller's
    rules set its fields one by one (a list is replaced, never changed in place), and
    ``build`` makes the registration the decision leaves."""

    partition: int
    replicas: list[int]
    leader: int
    leader_epoch: int
    isr: list[int]
    partition_epoch: int
    adding_replicas: list[int]
    removing_replicas: list[int]
    last_unclean_election: Reason | None
    last_leader_rebalance: Reason | None

    @classmethod
    def of(cls, registration: PartitionRegistration) -> PartitionChangeBuilder:
        return cls(**registration.to_json())

    def build(self) -> PartitionRegistration:
        return PartitionRegistration(
            self.partition, **{name: getattr(self, name) for name in PARTITION_FIELDS}
        )
