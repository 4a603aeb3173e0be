"""The quick tier fuzzes the request side for FUZZ_S seconds (scripts/fuzz does it for ten
minutes): nothing a mutated client frame does may crash, balloon or stall the broker.

atheris ends its process when it is done, so the fuzzer runs in a child python; the broker
it fuzzes is in that child's process, not a brokerd daemon."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import CORPUS

pytestmark = pytest.mark.unit

FUZZ_S = 15  # plus a few seconds of start-up (instrumenting brokerd)
ROOT = Path(__file__).parents[2]


def test_fuzzing_client_frames_finds_nothing(tmp_path):
    found = tmp_path / "found"
    found.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz.fuzz_requests",
            str(tmp_path / "cluster"),
            f"-max_total_time={FUZZ_S}",
            f"-artifact_prefix={tmp_path}/",
            str(found),
            str(CORPUS),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=FUZZ_S + 60,
    )
    assert run.returncode == 0, run.stderr[-6000:]
