"""What changed between two `kctl watch` snapshots, in words a class can follow.

The dashboard shows the state; these lines narrate the transitions a teacher points at, with
the moment they were seen: a broker paused, a network fault made or healed (kctl broker
isolate, cluster partition, broker netem), the controller moved (and a paused one woke up
fenced), a leader was elected with a higher epoch (out of sync, in an unclean election; or
the preferred one back, on the controller's imbalance check, and why), the ISR shrank or
grew (an ISR without its leader is flagged as an anomaly), fell below min.insync.replicas,
the high watermark stalled, a replica truncated a divergent tail, retention or DeleteRecords
moved the log start, a transaction opened or ended, a group started rebalancing; in a
KIP-848 consumer group, each step of a rebalance (a member joining or leaving, the group
epoch, a partition revoked from one member and assigned to another, with the member epochs);
in a share group, members joining and leaving and each share partition's start offset moving
on, and what happened to its records since the last moment, as the partition's leader counts
it (Kafka's admin APIs do not tell in-flight records): records acquired, acquired again with
a higher delivery count, released, rejected, accepted, back after an acquisition lock
expired, archived at the delivery count limit, and how many are in flight.
"""

from __future__ import annotations

from brokerd.state.faults import NetworkFaults
from kctl.cluster.netfaults import describe

HIGH_WATERMARK_STALL_MS = 1000  # records waiting this long for in-sync replicas: a stall

LOG_START_REASONS = {
    "retention": "retention.ms/retention.bytes deleted old segments",
    "DeleteRecords": "DeleteRecords",
}


def changes(before: dict, after: dict) -> list[str]:
    """One line per change from `before` to `after` (snapshots of kctl.cluster.snapshot plus
    groups)."""
    return (
        _broker_changes(before, after)
        + _network_changes(before, after)
        + _controller_change(before, after)
        + _controller_fencing(before, after)
        + _partition_changes(before, after)
        + _group_changes(before, after)
        + _share_partition_changes(before, after)
    )


def _broker_changes(before: dict, after: dict) -> list[str]:
    was = {b["id"]: b for b in before["brokers"]}
    lines = [
        f"broker {b['id']}: {was[b['id']]['state']} -> {b['state']}"
        for b in after["brokers"]
        if b["id"] in was and was[b["id"]]["state"] != b["state"]
    ]
    for b in after["brokers"]:
        rate = b.get("replication_throttle_bytes_per_s")
        if b["id"] in was and rate != was[b["id"]].get("replication_throttle_bytes_per_s"):
            lines.append(
                f"broker {b['id']}: follows at full speed again"
                if rate is None
                else f"broker {b['id']}: follows at most {rate} bytes/s (throttled)"
            )
    return lines


def _network_changes(before: dict, after: dict) -> list[str]:
    """Network faults made and healed, as `kctl cluster status` tells them."""
    was, now = (describe(NetworkFaults.from_json(s.get("network_faults") or {})) for s in (before, after))
    return [f"network: {line}" for line in now if line not in was] + [
        f"network: healed: {line}" for line in was if line not in now
    ]


def _controller_change(before: dict, after: dict) -> list[str]:
    old, new = before["controller"], after["controller"]
    if old == new or new is None:
        return []
    return [
        f"controller: broker {new['broker_id']} (epoch {new['epoch']})"
        + ("" if old is None else f", was broker {old['broker_id']} (epoch {old['epoch']})")
    ]


def _controller_fencing(before: dict, after: dict) -> list[str]:
    fenced = after.get("fenced_controller")
    if fenced is None or fenced == before.get("fenced_controller"):
        return []
    return [
        f"controller: broker {fenced['broker_id']} woke up with controller epoch "
        f"{fenced['epoch']}, superseded by epoch {fenced['current_epoch']}: fenced, it resigned"
    ]


def _partition_changes(before: dict, after: dict) -> list[str]:
    was = {(t["topic"], p["partition"]): p for t in before["topics"] for p in t["partitions"]}
    lines = []
    for topic in after["topics"]:
        for p in topic["partitions"]:
            old = was.get((topic["topic"], p["partition"]))
            if old is not None:
                lines += _partition_change(f"{topic['topic']}/{p['partition']}", old, p)
    return lines


def _partition_change(name: str, old: dict, new: dict) -> list[str]:
    lines = []
    if old["leader"] != new["leader"] or old["leader_epoch"] != new["leader_epoch"]:
        lines.append(
            f"{name}: leader {_leader(old['leader'])} -> {_leader(new['leader'])}, "
            f"epoch {old['leader_epoch']} -> {new['leader_epoch']}" + _leader_rebalance(new)
        )
    shrunk = set(old["isr"]) - set(new["isr"])
    grown = set(new["isr"]) - set(old["isr"])
    if shrunk or grown:
        how = "shrank" if shrunk and not grown else "grew" if grown and not shrunk else "changed"
        lines.append(f"{name}: ISR {how} to [{','.join(map(str, new['isr']))}]")
    return (
        lines
        + _leader_outside_isr(name, old, new)
        + _unclean_election(name, old, new)
        + _min_isr_change(name, old, new)
        + _high_watermark_stall(name, old, new)
        + _truncations(name, old, new)
        + _log_start_move(name, old, new)
        + _transaction_changes(name, old, new)
    )


def _leader_outside_isr(name: str, old: dict, new: dict) -> list[str]:
    """An anomaly, told when it appears: the leader is always in its own ISR, and an ISR
    without it (a deposed leader's ISR change) lets the controller elect a replica that may
    lack committed records."""
    if new["leader"] < 0 or new["leader"] in new["isr"]:
        return []
    if (old["leader"], old["isr"]) == (new["leader"], new["isr"]):
        return []
    isr = ",".join(map(str, new["isr"]))
    return [f"{name}: ANOMALY: ISR [{isr}] leaves out leader {new['leader']}"]


def _unclean_election(name: str, old: dict, new: dict) -> list[str]:
    """The controller's record of electing a replica that was not in sync."""
    election = new.get("last_unclean_election")
    if election is None or election == old.get("last_unclean_election"):
        return []
    bypassed = ",".join(map(str, election["isr"]))
    return [
        f"{name}: unclean election at epoch {election['leader_epoch']}: broker "
        f"{new['leader']} was not in the ISR [{bypassed}]; records only [{bypassed}] had are lost"
    ]


def _leader_rebalance(new: dict) -> str:
    """Why leadership went back to the preferred replica, when the controller's imbalance check
    moved it at this leader epoch: the imbalance of the broker it went to, as recorded then."""
    moved = new.get("last_leader_rebalance")
    if moved is None or moved["leader_epoch"] != new["leader_epoch"]:
        return ""
    preferred = moved["preferred"]
    partitions = "partition" if preferred == 1 else "partitions"
    elsewhere = 100 * (preferred - moved["led"]) / preferred
    return (
        f": preferred leader back after the imbalance check (broker {new['leader']} led "
        f"{moved['led']} of its {preferred} preferred {partitions}, {elsewhere:.4g}% led "
        f"elsewhere, above leader.imbalance.per.broker.percentage={moved['percentage']})"
    )


def _min_isr_change(name: str, old: dict, new: dict) -> list[str]:
    """Crossing min.insync.replicas: below it the leader refuses acks=all produce."""
    # A new leader publishes the topic's setting a moment after its election: until then the
    # last one known stands, so an ISR that shrinks as the leader moves is still told.
    need = new.get("min_insync_replicas") or old.get("min_insync_replicas")
    was_need = old.get("min_insync_replicas") or need
    if need is None or was_need is None:
        return []
    under, was_under = len(new["isr"]) < need, len(old["isr"]) < was_need
    if under and not was_under:
        return [
            f"{name}: ISR of {len(new['isr'])} < min.insync.replicas={need}: acks=all "
            "produce refused (NOT_ENOUGH_REPLICAS)"
        ]
    if was_under and not under:
        return [f"{name}: ISR back to min.insync.replicas={need}: acks=all accepted again"]
    return []


def _high_watermark_stall(name: str, old: dict, new: dict) -> list[str]:
    """Records the leader has but in-sync replicas have not copied for a while: acks=all
    producers wait, consumers see nothing new, until those replicas fetch or leave the ISR."""
    stalled = (new.get("high_watermark_waiting_ms") or 0) >= HIGH_WATERMARK_STALL_MS
    was_stalled = (old.get("high_watermark_waiting_ms") or 0) >= HIGH_WATERMARK_STALL_MS
    hwm = new.get("high_watermark")
    if stalled and not was_stalled:
        assert hwm is not None  # the leader publishes it with how long records waited for it
        holding = [
            b for b in new["isr"] if b != new["leader"] and (new["log_end_offsets"].get(str(b)) or 0) <= hwm
        ] or ["?"]
        return [
            f"{name}: high watermark stalled at {hwm} for "
            f"{new['high_watermark_waiting_ms'] / 1000:.1f}s: in-sync replica(s) "
            f"{','.join(map(str, holding))} not fetching"
        ]
    if was_stalled and not stalled and hwm is not None:
        return [f"{name}: high watermark moving again, {old['high_watermark']} -> {hwm}"]
    return []


def _truncations(name: str, old: dict, new: dict) -> list[str]:
    was = old.get("truncations") or {}
    return [
        f"{name}: replica {b} truncated its log from {t['from']} to {t['to']}: records "
        f"the leader of epoch {t['leader_epoch']} does not have"
        for b, t in (new.get("truncations") or {}).items()
        if t is not None and t != was.get(b)
    ]


def _log_start_move(name: str, old: dict, new: dict) -> list[str]:
    start, was = new.get("log_start_offset"), old.get("log_start_offset")
    if start is None or was is None or start <= was:
        return []
    why = LOG_START_REASONS.get(new.get("log_start_moved_by") or "", "records deleted")
    return [f"{name}: log start {was} -> {start}: {why}"]


def _transaction_changes(name: str, old: dict, new: dict) -> list[str]:
    """Transactions that opened or ended. The leader publishes only the open ones, so an end
    is seen, not whether it was a commit or an abort; a short one may never be seen at all."""
    was = {(t["producer_id"], t["first_offset"]): t for t in old.get("open_transactions") or []}
    now = {(t["producer_id"], t["first_offset"]): t for t in new.get("open_transactions") or []}
    lines = [
        f"{name}: transaction opened by producer {t['producer_id']} (epoch {t['producer_epoch']}) "
        f"at offset {t['first_offset']}"
        for key, t in now.items()
        if key not in was
    ]
    lines += [
        f"{name}: transaction of producer {t['producer_id']} from offset {t['first_offset']} "
        f"ended (committed or aborted), last stable offset {new.get('last_stable_offset')}"
        for key, t in was.items()
        if key not in now
    ]
    return lines


def _leader(broker: int) -> str:
    return str(broker) if broker >= 0 else "none"


def _group_changes(before: dict, after: dict) -> list[str]:
    was = {g["group"]: g for g in before.get("groups", []) if "state" in g}
    lines = []
    for group in after.get("groups", []):
        old = was.get(group["group"])
        if old is None or "state" not in group:
            continue
        name = group["group"]
        if old["state"] != group["state"]:
            lines.append(f"group {name}: {old['state']} -> {group['state']}")
        if group.get("type") in ("consumer", "share") and old.get("type") == group.get("type"):
            lines += _member_changes(name, old, group) + _partition_moves(name, old, group)
            lines += _pending_moves(name, old, group) + _start_offset_moves(name, old, group)
        elif len(old["members"]) != len(group["members"]):
            lines.append(f"group {name}: {len(old['members'])} -> {len(group['members'])} member(s)")
    return lines


# KIP-848 consumer groups and KIP-932 share groups: the coordinator gives every member an
# epoch and moves partitions one at a time, so a rebalance is told as the steps it is made of.


def _member_changes(name: str, old: dict, new: dict) -> list[str]:
    """Members that joined or left, and the group epoch that counted it."""
    was = {m["member_id"] for m in old["members"]}
    now = {m["member_id"]: m for m in new["members"]}
    lines = [
        f"group {name}: member {member_id} joined at epoch {m.get('member_epoch')}"
        for member_id, m in now.items()
        if member_id not in was
    ]
    lines += [f"group {name}: member {member_id} left" for member_id in sorted(was - set(now))]
    if old.get("group_epoch") != new.get("group_epoch") and new.get("group_epoch") is not None:
        lines.append(f"group {name}: group epoch {old.get('group_epoch')} -> {new['group_epoch']}")
    return lines


def _owners(doc: dict, field: str = "assignment") -> dict[str, dict[str, int | None]]:
    """'topic/partition' -> {member id: member epoch} of the members holding it (a share
    group's partitions may have several)."""
    owners: dict[str, dict[str, int | None]] = {}
    for m in doc["members"]:
        for p in m.get(field) or []:
            owners.setdefault(f"{p['topic']}/{p['partition']}", {})[m["member_id"]] = m.get("member_epoch")
    return owners


def _partition_moves(name: str, old: dict, new: dict) -> list[str]:
    """Partitions a member gave up (revoked, or given up as it left the group), then
    partitions a member got, each with the member epoch it was seen at: the epoch it held the
    partition in, and the epoch it got it in."""
    before, after = _owners(old), _owners(new)
    current = {m["member_id"] for m in new["members"]}
    revoked, assigned = [], []
    for partition in sorted(set(before) | set(after)):
        held, holds = before.get(partition, {}), after.get(partition, {})
        for member_id, epoch in held.items():
            if member_id not in holds:
                how = "revoked from" if member_id in current else "given up by departed"
                revoked.append(f"group {name}: {partition} {how} member {member_id} at epoch {epoch}")
        for member_id, epoch in holds.items():
            if member_id not in held:
                assigned.append(f"group {name}: {partition} assigned to member {member_id} at epoch {epoch}")
    return revoked + assigned


def _pending_moves(name: str, old: dict, new: dict) -> list[str]:
    """KIP-848's incremental step, newly seen: a partition in one member's target assignment
    that another member still holds waits until that member revokes it."""
    was_pending = _pending(old)
    lines = []
    for partition, (member_id, epoch, holder) in sorted(_pending(new).items()):
        if was_pending.get(partition, (None,))[0] != member_id:
            lines.append(
                f"group {name}: {partition} to move to member {member_id} (target epoch {epoch}) "
                f"once member {holder} revokes it"
            )
    return lines


def _pending(doc: dict) -> dict[str, tuple[str, int | None, str]]:
    """partition -> (member it goes to, the target's epoch, the member still holding it)."""
    held, targets = _owners(doc), _owners(doc, "target_assignment")
    epoch = doc.get("assignment_epoch")
    pending = {}
    for partition, members in targets.items():
        holders = [m for m in held.get(partition, {}) if m not in members]
        for member_id in members:
            if member_id not in held.get(partition, {}) and holders:
                pending[partition] = (member_id, epoch, holders[0])
    return pending


def _start_offset_moves(name: str, old: dict, new: dict) -> list[str]:
    """A share partition's start offset moving on: every record below it is acknowledged
    (accepted or rejected) or archived, so no member gets those again."""
    was = {(p["topic"], p["partition"]): p.get("start_offset") for p in old.get("partitions", [])}
    lines = []
    for p in new.get("partitions", []):
        start, before = p.get("start_offset"), was.get((p["topic"], p["partition"]))
        if start is not None and before is not None and start > before:
            lines.append(
                f"group {name}: {p['topic']}/{p['partition']} share start offset {before} -> {start}: "
                "records below it acknowledged or archived"
            )
    return lines


# KIP-932 share partitions: the leader's running counts, told as what changed between two
# moments (a share partition seen for the first time counts from zero).

SHARE_COUNTS = (
    ("delivered", "{n} acquired"),
    ("redelivered", "{n} of them acquired again"),
    ("released", "{n} released"),
    ("lock_expired", "{n} back after their acquisition lock expired"),
    ("rejected", "{n} rejected"),
    ("archived", "{n} archived at the delivery count limit"),
    ("accepted", "{n} accepted"),
)


def _share_partition_changes(before: dict, after: dict) -> list[str]:
    was = {(s["group"], s["topic"], s["partition"]): s for s in before.get("share_partitions") or []}
    lines = []
    for new in after.get("share_partitions") or []:
        old = was.get((new["group"], new["topic"], new["partition"]))
        if old is not None and old.get("leader_epoch") != new.get("leader_epoch"):
            old = None  # a new leader counts from where it took over: nothing to compare
        line = _share_partition_change(new, old or {})
        if line:
            lines.append(line)
    return lines


def _share_partition_change(new: dict, old: dict) -> str | None:
    """One line for a share partition whose counts went up, e.g. "group G: orders/0: 3
    acquired, 2 of them acquired again (delivery count 2), 1 released; 3 in flight, 3
    acquired"."""
    parts = []
    for field, words in SHARE_COUNTS:
        n = (new.get(field) or 0) - (old.get(field) or 0)
        if n > 0:
            text = words.format(n=n)
            if field == "redelivered":
                text += _delivery_counts(new.get("redelivered_at") or {}, old.get("redelivered_at") or {})
            parts.append(text)
    if not parts:
        return None
    in_flight = (new.get("acquired") or 0) + (new.get("available") or 0)
    tail = f"{in_flight} in flight, {new.get('acquired') or 0} acquired"
    return f"group {new['group']}: {new['topic']}/{new['partition']}: {', '.join(parts)}; {tail}"


def _delivery_counts(new: dict, old: dict) -> str:
    """The delivery counts records were acquired again with since the last moment."""
    counts = sorted(int(c) for c, n in new.items() if n > (old.get(c) or 0))
    if not counts:
        return ""
    if len(counts) == 1:
        return f" (delivery count {counts[0]})"
    return f" (delivery counts {counts[0]}-{counts[-1]})"
