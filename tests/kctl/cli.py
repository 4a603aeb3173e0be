"""Running the real `kctl` CLI from tests, as a separate process.

    from tests.kctl.cli import run_kctl
    result = run_kctl("consume", "t", "-e", env={"KCTL_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr

The child is `python -m kctl` with the current interpreter (no PATH needed), no colour, and
a hard timeout so a hanging command fails the test instead of blocking the suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping

DEFAULT_TIMEOUT_S = 60.0


def kctl_command(*args: str) -> list[str]:
    """argv that runs kctl with this interpreter, for tests that need a Popen of their own."""
    return [sys.executable, "-m", "kctl", *args]


def kctl_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment kctl runs with: this one, without colour, plus `env`."""
    return {**os.environ, "NO_COLOR": "1", **(env or {})}


def run_kctl(
    *args: str,
    input: bytes | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> subprocess.CompletedProcess:
    """Run kctl to completion; stdout is bytes (records are binary), stderr is text."""
    data = input.encode() if isinstance(input, str) else input
    proc = subprocess.run(
        kctl_command(*args), input=data, capture_output=True, env=kctl_env(env), timeout=timeout
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout, proc.stderr.decode(errors="replace")
    )


def partitions_held(member) -> set[int]:
    """The partitions a `kctl consume -g` member holds, from its rebalance lines on stderr;
    with the consumer protocol (KIP-848) each line names only what that step assigned or
    revoked."""
    owned: set[int] = set()
    for line in list(member.err):
        found = re.match(r"group \S+: (assigned|revoked|lost) (.*)", line)
        if found:
            parts = {int(p) for p in re.findall(r"/(\d+)", found[2])}
            owned = owned | parts if found[1] == "assigned" else owned - parts
    return owned
