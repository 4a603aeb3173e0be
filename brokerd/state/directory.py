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

from filelock import FileLock, Timeout

from brokerd.atomic_file import atomic_write

WRITE_LOCK_TIMEOUT_S = 10.0


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

    def __init__(self, cluster_dir: Path):
        self.cluster_dir = Path(cluster_dir)
        self.dir = self.cluster_dir / "state"

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialises read-modify-write cycles of shared files across every process."""
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
