"""The state directory itself: its write lock and its JSON documents.

Every part of ClusterState builds on StateDirectory and reads and writes ``state/`` only
through what is here, so two rules hold everywhere: a document is replaced atomically
(readers see the old one or the new one, never half), and a read-modify-write of a shared
document holds the write lock (two brokers never lose each other's change).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from brokerd.atomic_file import atomic_write

JsonObject = dict[str, Any]  # a state file's document, or an object in one

WRITE_LOCK_TIMEOUT_S = 10.0
NETWORK_FAULTS = "faults/network.json"


class QuorumUnreachable(TimeoutError):
    """The broker is cut off from the controller quorum (`kctl broker isolate`): what it asks
    of the state directory times out, as a request to an unreachable KRaft quorum would."""


def read_json(path: Path, default: Any = None) -> Any:
    """A state file's document, or ``default`` while the file does not exist."""
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        return default


def write_json(path: Path, doc: Any, mode: int = 0o644) -> None:
    """Replace a state file atomically; ``mode`` 0o600 keeps a secret from other users."""
    atomic_write(path, json.dumps(doc, indent=1, sort_keys=True).encode(), mode)


def file_version(path: Path) -> tuple[int, int] | None:
    """(inode, mtime) of a state file, None when absent: a change detector that costs one
    stat, since every replacement is a rename and so gives the file a new inode."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


class StateDirectory:
    """``<cluster>/state/``: the base of every part of ClusterState."""

    def __init__(self, cluster_dir: Path, member: int | None = None):
        self.cluster_dir = Path(cluster_dir)
        self.dir = self.cluster_dir / "state"
        self.member = member  # the broker this object serves; None for kctl
        self._quorum_cut: tuple[tuple[int, int] | None, bool] = (None, False)

    def reaches_quorum(self) -> bool:
        """Whether the broker this object serves can reach the controller quorum. The state
        directory is the cluster's quorum, so a network fault that isolates a broker cuts it
        off from here too (kctl writes the cut to faults/network.json, which stands for the
        network, not the quorum: a broker reads it at the cost of one stat while unchanged)."""
        if self.member is None:
            return True
        path = self.dir / NETWORK_FAULTS
        version = file_version(path)
        if version != self._quorum_cut[0]:
            cut = self.member in read_json(path, {}).get("cut_from_quorum", [])
            self._quorum_cut = (version, cut)
        return not self._quorum_cut[1]

    def require_quorum(self) -> None:
        if not self.reaches_quorum():
            raise QuorumUnreachable(f"broker {self.member} cannot reach the controller quorum")

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialises read-modify-write cycles of shared files across every process."""
        self.require_quorum()
        from filelock import FileLock, Timeout  # asyncio comes with it: not for kctl's reads

        try:
            with FileLock(str(self.dir / ".lock"), timeout=WRITE_LOCK_TIMEOUT_S):
                yield
        except Timeout as exc:
            raise TimeoutError(f"state directory {self.dir} is locked by another process") from exc

    @contextmanager
    def updating(self, name: str, default: Any, mode: int = 0o644) -> Iterator[Any]:
        """Read-modify-write the shared document ``name`` under the write lock: the caller
        changes the yielded document in place, and it is written back unless the block
        raised."""
        with self.write_lock():
            doc = read_json(self.dir / name, default)
            yield doc
            write_json(self.dir / name, doc, mode)
