"""The packet filter that makes a local cluster's network faults real: Linux's nftables.

Each broker of a local cluster listens on, and connects from, a loopback address of its own
(127.0.1.ID), and clients use 127.0.0.1, so a rule can name who sends and who receives. The
rules live in a table of the cluster's own (`inet kctl_<hash of its directory>`), rebuilt
whole from the faults in force by one atomic `nft -f` batch, so two commands that change the
faults at once never leave half a rule set, and deleting the table heals everything. The
table's first rule lets through every packet that is not to or from one of the cluster's
ports: the addresses 127.0.1.ID repeat from cluster to cluster, the ports do not.

A cut (sender, receiver) drops what the sender sends the receiver, on every connection
between them: requests and answers alike. Dropped on output, a new connection times out and
an established one stops delivering, as across a real network partition. Loss drops a share
of a broker's packets, in and out, at random (`numgen random`); a packet between two lossy
brokers is drawn once, so 5% on every broker loses 5% of the packets, not 10%.
"""

from __future__ import annotations

import hashlib
import ipaddress
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from brokerd.state.faults import CLIENTS, NetworkFaults, Node
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

TABLE_PREFIX = "kctl_"
NFT_TIMEOUT_S = 10.0


class NoSuchTable(KctlError):
    """nft was asked about a table that does not exist."""


def table_name(cluster_dir: Path) -> str:
    """The cluster's own table: one per cluster directory, so clusters never touch each other's."""
    digest = hashlib.sha1(str(Path(cluster_dir).resolve()).encode()).hexdigest()[:12]
    return TABLE_PREFIX + digest


def ruleset(table: str, faults: NetworkFaults, addresses: Mapping[int, tuple[str, int]]) -> str:
    """The `nft -f` batch that leaves the table holding exactly ``faults``' packet rules: it
    is created (if absent) and deleted first, so the batch works whatever was there, and
    made again only when some packet is to be dropped."""
    batch = [f"table inet {table}", f"delete table inet {table}"]
    rules = [rule for cut in sorted(faults.cuts, key=str) for rule in _cut_rules(cut, addresses)]
    lossy = sorted({addresses[broker_id][0] for broker_id in faults.loss})
    for broker_id, percent in sorted(faults.loss.items()):
        host = addresses[broker_id][0]
        # each packet is drawn once: by its sender's loss if it has one, else by its receiver's
        rules += [
            f"ip saddr {host} numgen random mod 100 < {percent} drop",
            f"ip daddr {host} ip saddr != @lossy numgen random mod 100 < {percent} drop",
        ]
    if rules:
        ports = ", ".join(str(port) for _, port in sorted(addresses.values()))
        hosts = ", ".join(sorted({host for host, _ in addresses.values()}))
        batch += [
            f"table inet {table} {{",
            f"  set ports {{ type inet_service; elements = {{ {ports} }}; }}",
            f"  set brokers {{ type ipv4_addr; elements = {{ {hosts} }}; }}",
            *([f"  set lossy {{ type ipv4_addr; elements = {{ {', '.join(lossy)} }}; }}"] if lossy else []),
            "  chain output {",
            "    type filter hook output priority filter; policy accept;",
            "    tcp dport != @ports tcp sport != @ports accept",
            *(f"    {rule}" for rule in rules),
            "  }",
            "}",
        ]
    return "\n".join(batch) + "\n"


def _cut_rules(cut: tuple[Node, Node], addresses: Mapping[int, tuple[str, int]]) -> list[str]:
    sender, receiver = ("!= @brokers" if node == CLIENTS else addresses[int(node)][0] for node in cut)
    return [f"ip saddr {sender} ip daddr {receiver} drop"]


def apply(cluster_dir: Path, faults: NetworkFaults, addresses: Mapping[int, tuple[str, int]]) -> None:
    """Make the cluster's packet rules those of ``faults`` (none when it has no packet fault)."""
    _nft(["-f", "-"], ruleset(table_name(cluster_dir), faults, addresses))


def remove(cluster_dir: Path) -> None:
    """Delete the cluster's table, if it has one: every packet fault healed."""
    apply(cluster_dir, NetworkFaults(), {})


def remove_if_present(cluster_dir: Path) -> None:
    """Delete the cluster's table where nft can be run; nothing where it cannot."""
    try:
        if rules_in_force(cluster_dir) is not None:
            remove(cluster_dir)
    except KctlError:
        pass  # no nft or no CAP_NET_ADMIN here: no table of ours either


def rules_in_force(cluster_dir: Path) -> str | None:
    """The cluster's table as nft lists it, None when it has none."""
    try:
        return _nft(["list", "table", "inet", table_name(cluster_dir)], "")
    except NoSuchTable:
        return None


def require_addresses(hosts: Mapping[int, str]) -> None:
    """Refuse to cut brokers that share an address: a rule could not tell them apart."""
    for broker_id, host in sorted(hosts.items()):
        shared = [other for other, h in hosts.items() if h == host and other != broker_id]
        if shared or not _is_ipv4(host) or host == "127.0.0.1":
            raise KctlError(
                f"broker {broker_id} listens on {host}, not an address of its own: restart the "
                "cluster (`kctl cluster down`, `kctl cluster up`) to give each broker one",
                ExitCode.CONFLICT,
            )


def require_nft() -> None:
    """One line and exit 6 where faults cannot be made: no nft, or no CAP_NET_ADMIN."""
    _nft(["list", "tables"], "")


def _nft(args: list[str], stdin: str) -> str:
    nft = shutil.which("nft") or next((p for p in ("/usr/sbin/nft", "/sbin/nft") if Path(p).exists()), None)
    if nft is None:
        raise KctlError(
            "network faults need nftables' `nft` command (Debian's package nftables)", ExitCode.CONFLICT
        )
    done = subprocess.run(
        [nft, *args], input=stdin, capture_output=True, text=True, timeout=NFT_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[0] if done.stderr.strip() else f"exit {done.returncode}"
        if "No such file or directory" in done.stderr:
            raise NoSuchTable(reason)
        if "Operation not permitted" in done.stderr:
            raise KctlError(
                "network faults need CAP_NET_ADMIN (run kctl as root, or the cluster and kctl "
                "in a namespace of their own: unshare -rn)",
                ExitCode.CONFLICT,
            )
        raise KctlError(f"nft refused the cluster's rules: {reason}", ExitCode.ERROR)
    return done.stdout


def _is_ipv4(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return False
