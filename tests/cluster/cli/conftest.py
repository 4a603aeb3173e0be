"""Fixtures of the CLI tests that more than one module uses."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.cli.lesson_harness import lesson_processes


@pytest.fixture
def learner(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A learner's environment: kctl's directory (progress) and the lessons' temporary
    directories both under tmp_path, so leftovers are seen, and killed after the test."""
    env = {"KCTL_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    yield env
    for pid in lesson_processes(tmp_path):
        os.kill(pid, signal.SIGKILL)
