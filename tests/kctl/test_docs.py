"""The committed man pages and completions must match the command tree."""

import filecmp
from pathlib import Path

import pytest

from kctl.gendocs import generate

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def test_committed_docs_are_current(tmp_path):
    written = generate(tmp_path)
    for folder in ("man", "completions"):
        expected = {p.name for p in written if p.parts[0] == folder}
        committed = {p.name for p in (REPO / folder).iterdir() if not p.name.startswith(".")}
        assert committed == expected, f"{folder}/ is stale: run `python -m kctl.gendocs`"
    stale = [str(p) for p in written if not filecmp.cmp(tmp_path / p, REPO / p, shallow=False)]
    assert not stale, f"stale: {stale}; run `python -m kctl.gendocs`"


def test_every_command_has_a_page_with_exit_codes(tmp_path):
    pages = {p.name: (tmp_path / p).read_text() for p in generate(tmp_path) if p.parts[0] == "man"}
    assert {
        "kctl.1",
        "kctl-consume.1",
        "kctl-produce.1",
        "kctl-topic-describe.1",
        "kctl-cluster-up.1",
        "kctl-bench-produce.1",
    } <= set(pages)
    for text in pages.values():
        assert ".SH EXIT STATUS" in text and ".B 130" in text
    assert "KCTL_BOOTSTRAP" in pages["kctl.1"] and "KCTL_HOME" in pages["kctl.1"]
