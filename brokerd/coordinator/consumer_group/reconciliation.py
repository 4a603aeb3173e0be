"""How a member moves from its current assignment to its target (Kafka's
CurrentAssignmentBuilder): partitions it must give up are revoked first, and the member keeps
its epoch until it confirms, in a heartbeat's owned partitions, that it let them go; new
partitions are handed out only once no other member has them. No partition is ever owned by
two members at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from brokerd.coordinator.consumer_group.model import Assignment, ConsumerGroupMember, MemberState

# (topic id, partition) -> epoch of the member that has it; absent when nobody does
OwnerEpoch = Callable[[uuid.UUID, int], int | None]


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    owner_epoch: OwnerEpoch,
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
) -> None:
    """Advance ``member`` towards ``target`` (computed at ``target_epoch``) in place.
    ``owned`` is what the member's heartbeat says it has, None when it did not say."""
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            _next(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
    elif member.state == MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.pending_revocation):
            return
        _next(member, min(member.member_epoch + 1, target_epoch), target_epoch, target, owner_epoch, owned)
    elif member.state == MemberState.UNRELEASED_PARTITIONS:
        _next(member, member.member_epoch, target_epoch, target, owner_epoch, owned)


def _still_owns(owned: Mapping[uuid.UUID, frozenset[int]] | None, revoked: Assignment) -> bool:
    """Whether the member may still have partitions it was asked to revoke; without an
    owned-partitions list it is assumed to."""
    if owned is None:
        return True
    return any(owned.get(topic_id, frozenset()) & partitions for topic_id, partitions in revoked.items())


def _next(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    owner_epoch: OwnerEpoch,
    owned: Mapping[uuid.UUID, frozenset[int]] | None,
) -> None:
    kept: Assignment = {}
    revoke: Assignment = {}
    to_assign: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in member.assigned.keys() | target.keys():
        current = member.assigned.get(topic_id, frozenset())
        wanted = target.get(topic_id, frozenset())
        if current & wanted:
            kept[topic_id] = current & wanted
        if current - wanted:
            revoke[topic_id] = current - wanted
        if wanted - current:
            to_assign[topic_id] = wanted - current
    if revoke and _still_owns(owned, revoke):
        # Give up first: the member stays in its epoch and keeps only what it keeps.
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = member_epoch
        member.state = MemberState.UNREVOKED_PARTITIONS
        member.assigned = kept
        member.pending_revocation = revoke
        return
    unreleased = False
    assigned = dict(kept)
    for topic_id, partitions in to_assign.items():
        free = frozenset(p for p in partitions if owner_epoch(topic_id, p) is None)
        unreleased |= free != partitions
        if free:
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | free
    member.previous_member_epoch = member.member_epoch
    member.member_epoch = target_epoch
    member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    member.assigned = assigned
    member.pending_revocation = {}
