"""Partition reassignment: moving a partition's replicas to other brokers without losing data.

Kafka's procedure (KIP-455), applied by the controller to a partition's record: the replica
set first becomes target + the replicas being removed, so the new replicas start fetching
while the old ones keep serving; the leader adds each new replica to the ISR once it has
caught up; when every target replica is in sync the removed ones are dropped, and if the
leader was one of them the controller elects a new leader from the target, bumping the
leader epoch. Until then nothing is taken away, so an acknowledged record stays on every
in-sync replica throughout.
"""

from __future__ import annotations

from kafka.errors import NoReassignmentInProgressError

from brokerd.metadata.registration import PartitionChangeBuilder, PartitionRegistration

Partition = PartitionRegistration | PartitionChangeBuilder  # as the metadata has it, or being decided on


def origin_replicas(record: Partition) -> list[int]:
    """The replicas the partition had before its ongoing reassignment (if any) began."""
    return [r for r in record.replicas if r not in record.adding_replicas]


def target_replicas(record: Partition) -> list[int]:
    """The replicas the partition will have when its reassignment completes."""
    return [r for r in record.replicas if r not in record.removing_replicas]


def is_reassigning(record: Partition) -> bool:
    return bool(record.adding_replicas or record.removing_replicas)


def start(record: PartitionChangeBuilder, target: list[int]) -> None:
    """Begin moving the partition to ``target`` (replacing any ongoing reassignment)."""
    origin = origin_replicas(record)
    record.adding_replicas = [r for r in target if r not in origin]
    record.removing_replicas = [r for r in origin if r not in target]
    _set_replicas(record, list(target) + record.removing_replicas)


def cancel(record: PartitionChangeBuilder) -> None:
    """Go back to the original replicas; replicas added so far are dropped."""
    if not is_reassigning(record):
        raise NoReassignmentInProgressError(f"partition {record.partition} has no reassignment in progress")
    origin = origin_replicas(record)
    record.adding_replicas, record.removing_replicas = [], []
    _set_replicas(record, origin)


def maybe_complete(record: PartitionChangeBuilder) -> bool:
    """Finish a reassignment whose target replicas are all in sync; True if it finished.

    A leader that was being removed is out of the ISR afterwards, so the controller's
    election rules give the partition a new leader from the target at a new leader epoch.
    """
    target = target_replicas(record)
    if not is_reassigning(record) or any(r not in record.isr for r in target):
        return False
    record.adding_replicas, record.removing_replicas = [], []
    _set_replicas(record, target)
    return True


def _set_replicas(record: PartitionChangeBuilder, replicas: list[int]) -> None:
    record.replicas = replicas
    record.isr = [r for r in record.isr if r in replicas]
    record.partition_epoch += 1
