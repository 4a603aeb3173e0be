"""The `kctl watch` screen: brokers, the network faults in force, partitions per topic (and,
with --sample, the latest record of each), groups, the connectors of a connect worker running
beside the cluster, the brokers' latest security events and recent changes.

Built as console Sections, so the same tables are printed once when stdout is not a
terminal and laid out in a Rich Live display when it is.
"""

from __future__ import annotations

import time

from rich.console import Group
from rich.text import Text

from brokerd.state.faults import NetworkFaults
from kctl.cluster import brokerview, netfaults, securityevents
from kctl.cluster.brokerview import BrokerView
from kctl.connect import status as connectorstatus
from kctl.shell import sections
from kctl.shell.console import Section, rich_table
from kctl.watch import sampleview

Event = tuple[float, str]


def build(snap: dict, events: list[Event]) -> list[Section]:
    controller = snap["controller"]
    out = [
        brokerview.section(
            [BrokerView(**b) for b in snap["brokers"]],
            None if controller is None else (controller["broker_id"], controller["epoch"]),
            title="BROKERS",
        )
    ]
    cuts = netfaults.describe(NetworkFaults.from_json(snap.get("network_faults") or {}))
    if cuts:  # which brokers cannot reach which, while it lasts
        out.append(Section("NETWORK FAULTS", ["fault"], [[line] for line in cuts]))
    out += [sections.partitions(f"TOPIC {t['topic']}", t["partitions"]) for t in snap["topics"]]
    if "sample" in snap:  # kctl watch TOPIC --sample
        out += sampleview.sections(snap["sample"])
    if snap.get("groups_error"):
        out.append(Section("GROUPS", ["error"], [[snap["groups_error"]]]))
    out += [_group(g) for g in snap.get("groups", [])]
    if snap.get("connect"):  # a connect worker runs beside the cluster
        out.append(_connectors(snap["connect"]))
    if snap.get("security_events"):
        out.append(
            Section(
                "SECURITY",
                ["time", "event"],
                [
                    [clock(e["time"]), _repeated(securityevents.line(e), e.get("count", 1))]
                    for e in snap["security_events"]
                ],
            )
        )
    if events:
        out.append(Section("EVENTS", ["time", "event"], [[clock(t), what] for t, what in events]))
    return out


def _repeated(text: str, count: int) -> str:
    return text if count == 1 else f"{text} (x{count})"


def clock(moment: float) -> str:
    """HH:MM:SS of a moment, in local time, as the watch shows it."""
    return time.strftime("%H:%M:%S", time.localtime(moment))


def _group(doc: dict) -> Section:
    if "error" in doc:
        return Section(f"GROUP {doc['group']}", ["error"], [[doc["error"]]])
    coordinator = doc["coordinator"]["id"] if doc["coordinator"] else "none"
    # KIP-848 and share groups say so, with the group epoch their rebalances step
    kind = f" ({doc['type']})" if doc.get("type") in ("consumer", "share") else ""
    epoch = f", group epoch {doc['group_epoch']}" if doc.get("group_epoch") is not None else ""
    title = (
        f"GROUP {doc['group']}{kind}: {doc['state']}, "
        f"{len(doc['members'])} member(s){epoch}, coordinator {coordinator}, total lag {doc['total_lag']}"
    )
    return sections.group_partitions(doc, title=title, wide=False)


def _connectors(doc: dict) -> Section:
    title = f"CONNECTORS of the connect worker at {doc['url']}"
    if doc.get("error"):
        return Section(title, ["error"], [[doc["error"]]])
    return connectorstatus.section(doc["connectors"], title)


def screen(snap: dict, events: list[Event], interval: float) -> Group:
    """The live display: a header line, then every section as a Rich table."""
    moment = time.strftime("%H:%M:%S", time.localtime(snap["time"]))
    header = Text(
        f"kctl watch: cluster {snap['cluster_id']} at {moment}, every {interval:g}s (Ctrl-C to stop)",
        style="bold",
    )
    return Group(header, *(rich_table(s) for s in build(snap, events)))
