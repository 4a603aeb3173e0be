"""The broker launcher's process (`python -m brokerd.launch`, see localcluster.BrokerLauncher),
started as early as kctl can start it.

A launcher spends most of a cluster's start importing brokerd. `kctl cluster up` starts one
before it reads the cluster directory; the executable starts it earlier still, before kctl
imports its command tree (Typer, Rich and the commands: a fifth of a second), when the
arguments ask for `cluster up`. A launcher nobody takes exits when kctl does: its standard
input closes, which tells it that no broker is coming.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from kctl.shell.helpcache import HELP_FLAGS

_started_early: subprocess.Popen[str] | None = None


def spawn() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "brokerd.launch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def start_early(args: Sequence[str]) -> None:
    """Start the launcher now if `args` (kctl's arguments) run `kctl cluster up`."""
    global _started_early
    if list(args[:2]) == ["cluster", "up"] and not any(arg in HELP_FLAGS for arg in args):
        _started_early = spawn()


def take() -> subprocess.Popen[str]:
    """The launcher started early for this command, or a new one."""
    global _started_early
    process, _started_early = _started_early, None
    return process if process is not None else spawn()
