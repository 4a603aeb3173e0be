"""The habits CI keeps on the code itself: ruff's lint rules and formatting, mypy (strict on
brokerd/storage and brokerd/protocol, checked everywhere else), and the import contracts of
.importlinter (storage and protocol stand alone, only the entry point holds the Broker,
coordinators and fetchers see it through brokerd/ports, kctl reaches brokerd through the
state directory). Settings live in pyproject.toml and .importlinter; each test prints what
the tool found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.unit, pytest.mark.timeout(600)]


def check(*command: str) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}{result.stderr}"


def test_ruff_lint_rules_pass():
    check(sys.executable, "-m", "ruff", "check", ".")


def test_the_code_is_formatted_as_ruff_formats_it():
    check(sys.executable, "-m", "ruff", "format", "--check", ".")


def test_mypy_passes():
    check(sys.executable, "-m", "mypy")


def test_the_import_contracts_hold():
    check(str(BIN / "lint-imports"), "--no-cache")
