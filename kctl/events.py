"""What changed between two `kctl watch` snapshots, in words a class can follow.

The dashboard shows the state; these lines narrate the transitions a teacher points at,
with the moment they were seen: a broker paused, the controller moved, a leader was elected
with a higher epoch, the ISR shrank or grew, a transaction opened or ended, a group started
rebalancing.
"""

from __future__ import annotations


def changes(before: dict, after: dict) -> list[str]:
    """One line per change from `before` to `after` (snapshots of kctl.snapshot plus groups)."""
    return (_broker_changes(before, after) + _controller_change(before, after)
            + _partition_changes(before, after) + _group_changes(before, after))


def _broker_changes(before: dict, after: dict) -> list[str]:
    was = {b["id"]: b["state"] for b in before["brokers"]}
    return [f"broker {b['id']}: {was[b['id']]} -> {b['state']}"
            for b in after["brokers"] if b["id"] in was and was[b["id"]] != b["state"]]


def _controller_change(before: dict, after: dict) -> list[str]:
    old, new = before["controller"], after["controller"]
    if old == new or new is None:
        return []
    return [f"controller: broker {new['broker_id']} (epoch {new['epoch']})"
            + ("" if old is None else f", was broker {old['broker_id']} (epoch {old['epoch']})")]


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
        lines.append(f"{name}: leader {_leader(old['leader'])} -> {_leader(new['leader'])}, "
                     f"epoch {old['leader_epoch']} -> {new['leader_epoch']}")
    shrunk = set(old["isr"]) - set(new["isr"])
    grown = set(new["isr"]) - set(old["isr"])
    if shrunk or grown:
        how = "shrank" if shrunk and not grown else "grew" if grown and not shrunk else "changed"
        lines.append(f"{name}: ISR {how} to [{','.join(map(str, new['isr']))}]")
    return lines + _transaction_changes(name, old, new)


def _transaction_changes(name: str, old: dict, new: dict) -> list[str]:
    """Transactions that opened or ended. The leader publishes only the open ones, so an end
    is seen, not whether it was a commit or an abort; a short one may never be seen at all."""
    was = {(t["producer_id"], t["first_offset"]): t for t in old.get("open_transactions") or []}
    now = {(t["producer_id"], t["first_offset"]): t for t in new.get("open_transactions") or []}
    lines = [f"{name}: transaction opened by producer {t['producer_id']} (epoch {t['producer_epoch']}) "
             f"at offset {t['first_offset']}" for key, t in now.items() if key not in was]
    lines += [f"{name}: transaction of producer {t['producer_id']} from offset {t['first_offset']} "
              f"ended (committed or aborted), last stable offset {new.get('last_stable_offset')}"
              for key, t in was.items() if key not in now]
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
        if old["state"] != group["state"]:
            lines.append(f"group {group['group']}: {old['state']} -> {group['state']}")
        if len(old["members"]) != len(group["members"]):
            lines.append(f"group {group['group']}: {len(old['members'])} -> "
                         f"{len(group['members'])} member(s)")
    return lines
