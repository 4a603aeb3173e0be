"""The tables kctl shows in more than one place, built from JSON-ready documents.

`kctl topic describe` and `kctl group describe` print them; `kctl watch` lays the same tables
out in a live dashboard, so a class sees one vocabulary everywhere (the broker table is
kctl.cluster.brokerview's). Styles only mark what a teacher points at: red for what is out
(a replica out of the ISR, a partition without leader), yellow for what lags.
"""

from __future__ import annotations

from rich.text import Text

from kctl.shell.console import Cell, Section


def partitions(title: str, docs: list[dict]) -> Section:
    """Per partition: leader, epoch, replicas, ISR, log start, last stable offset, high
    watermark, replica log ends and open transactions."""
    return Section(
        title,
        [
            "partition",
            "leader",
            "epoch",
            "replicas",
            "isr",
            "log-start",
            "lso",
            "hwm",
            "log-end",
            "open-txns",
        ],
        [_partition_row(p) for p in docs],
    )


def _partition_row(p: dict) -> list[Cell]:
    """Out-of-sync replicas in red, replicas whose log end is below the high watermark in yellow,
    and the last stable offset in yellow while an open transaction holds it below the watermark."""
    hwm = p["high_watermark"]
    replicas = Text()
    ends = Text()
    for broker in p["replicas"]:
        end = p["log_end_offsets"].get(str(broker))
        lagging = end is None or (hwm is not None and end < hwm)
        _append(replicas, str(broker), "bold red" if broker not in p["isr"] else None)
        if str(broker) in p["log_end_offsets"]:
            _append(ends, f"{broker}:{'-' if end is None else end}", "yellow" if lagging else None)
    leader = p["leader"] if p["leader"] >= 0 else Text("none", style="bold red")
    isr = ",".join(map(str, p["isr"]))
    return [
        p["partition"],
        leader,
        p["leader_epoch"],
        replicas,
        isr,
        p["log_start_offset"],
        _stable(p.get("last_stable_offset"), hwm),
        hwm,
        ends,
        _transactions(p.get("open_transactions")),
    ]


def _stable(stable: int | None, hwm: int | None) -> Cell:
    """The last stable offset, yellow while an open transaction holds it below the watermark."""
    if stable is not None and hwm is not None and stable < hwm:
        return Text(str(stable), style="yellow")
    return stable


def _transactions(open_txns: list[dict] | None) -> str | None:
    """Open transactions as PRODUCER-ID:EPOCH@FIRST-OFFSET; none (or unknown) shows as '-'."""
    if not open_txns:
        return None
    return ",".join(f"{t['producer_id']}:{t['producer_epoch']}@{t['first_offset']}" for t in open_txns)


def _append(cells: Text, item: str, style: str | None) -> None:
    """Comma-separated items, so piped output keeps one whitespace-free word per column."""
    if cells:
        cells.append(",")
    cells.append(item, style=style)


def group_summary(doc: dict) -> Section:
    rows = [
        ["group", doc["group"]],
        ["coordinator", node(doc["coordinator"])],
        ["state", doc["state"]],
        ["type", doc.get("type")],
        ["protocol-type", doc["protocol_type"]],
        ["assignor", doc["assignor"]],
        ["members", len(doc["members"])],
        ["total-lag", doc["total_lag"]],
    ]
    if "group_epoch" in doc:  # KIP-848 and share groups
        rows[5:5] = [["group-epoch", doc["group_epoch"]], ["assignment-epoch", doc["assignment_epoch"]]]
    return Section("SUMMARY", ["key", "value"], rows)


def group_members(doc: dict) -> Section:
    """Per member of a KIP-848 or share group: its epoch and partitions, and (KIP-848) the
    target assignment the broker is moving it to, in yellow, while it differs."""
    rows = []
    for m in doc["members"]:
        target = m.get("target_assignment")
        moving = target is not None and _pairs(target) != _pairs(m["assignment"])
        rows.append(
            [
                m["member_id"],
                m.get("member_epoch"),
                m["client_id"],
                m["host"],
                _assignment(m["assignment"]),
                Text(_assignment(target), style="yellow") if moving and target is not None else None,
            ]
        )
    return Section("MEMBERS", ["member-id", "epoch", "client-id", "host", "assignment", "target"], rows)


def _pairs(assignment: list[dict]) -> list[tuple[str, int]]:
    return sorted((p["topic"], p["partition"]) for p in assignment)


def _assignment(assignment: list[dict]) -> str:
    """TOPIC/P,TOPIC/P (whitespace-free, one word per column when piped)."""
    return ",".join(f"{t}/{p}" for t, p in _pairs(assignment)) or "-"


_GROUP_COLUMNS = [
    "topic",
    "partition",
    "current-offset",
    "log-start-offset",
    "last-stable-offset",
    "log-end-offset",
    "lag",
    "member-id",
    "client-id",
    "host",
]
_WIDE_ONLY = {"last-stable-offset", "client-id", "host"}


def group_partitions(doc: dict, title: str = "PARTITIONS", wide: bool = True) -> Section:
    """rpk's columns plus the last stable offset, where read_committed consumers stop (lag
    above it is an open transaction); `wide=False` (the dashboard) leaves out the last stable
    offset, client id and host. A share group has share partitions instead."""
    if doc.get("type") == "share":
        return _share_partitions(doc, title)
    columns = [c for c in _GROUP_COLUMNS if wide or c not in _WIDE_ONLY]
    rows = []
    for p in doc["partitions"]:
        lag = Text(str(p["lag"]), style="yellow") if p["lag"] else p["lag"]
        cells = dict(
            zip(
                _GROUP_COLUMNS,
                [
                    p["topic"],
                    p["partition"],
                    p["committed_offset"],
                    p["log_start_offset"],
                    _stable(p.get("last_stable_offset"), p["high_watermark"]),
                    p["high_watermark"],
                    lag,
                    p["member_id"],
                    p["client_id"],
                    p["host"],
                ],
            )
        )
        rows.append([cells[c] for c in columns])
    return Section(title, columns, rows)


def _share_partitions(doc: dict, title: str) -> Section:
    """kafka-share-groups.sh --describe --offsets' columns: the share-partition start offset
    (all below it acknowledged or archived), the log start and end, the lag between them and
    the members the partition is assigned to (several may share it)."""
    rows = [
        [
            p["topic"],
            p["partition"],
            p["start_offset"],
            p["log_start_offset"],
            p["high_watermark"],
            Text(str(p["lag"]), style="yellow") if p["lag"] else p["lag"],
            ",".join(p["members"]) or None,
        ]
        for p in doc["partitions"]
    ]
    columns = ["topic", "partition", "start-offset", "log-start-offset", "log-end-offset", "lag", "members"]
    return Section(title, columns, rows)


def node(doc: dict | None) -> str | None:
    """A broker as 'id (host:port)', e.g. a group's coordinator."""
    return None if doc is None else f"{doc['id']} ({doc['host']}:{doc['port']})"
