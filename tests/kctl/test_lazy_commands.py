"""kctl starts without importing its heavy clients: `kctl --help` and TAB completion must not
pay for librdkafka, kafka-python, PySpark, matplotlib or the broker (docs/performance.md).

Each check runs in a fresh interpreter, since this test process has imported everything."""

import json
import os
import subprocess
import sys

import pytest
import typer

from kctl.main import COMMANDS, KctlGroup, app

pytestmark = pytest.mark.unit

HEAVY = ("confluent_kafka", "kafka", "pyspark", "matplotlib", "brokerd")

# At exit, prints as its last stderr line the top-level packages among HEAVY it has imported.
REPORT_AT_EXIT = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: print(json.dumps(sorted({m.split('.')[0] for m in sys.modules}"
    f" & {set(HEAVY)!r})), file=sys.stderr))\n"
)


def heavy_imports(code: str, env: dict[str, str] | None = None) -> list[str]:
    """The heavy packages a fresh interpreter has imported after running `code`."""
    done = subprocess.run(
        [sys.executable, "-c", REPORT_AT_EXIT + code],
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return json.loads(done.stderr.splitlines()[-1])


def test_importing_the_command_tree_imports_no_client():
    assert heavy_imports("import kctl.main") == []


def test_completing_a_command_name_imports_no_client():
    env = {"COMP_WORDS": "kctl to", "COMP_CWORD": "1", "_KCTL_COMPLETE": "complete_bash"}
    assert heavy_imports("from kctl.main import app\napp(prog_name='kctl')", env) == []


def test_root_help_imports_no_client():
    assert heavy_imports("from kctl.main import app\napp(['--help'], prog_name='kctl')") == []


def test_each_listed_summary_is_the_commands_own():
    """The table's help must list every command as its module defines it (and the man pages,
    generated from the modules, say)."""
    root = typer.main.get_command(app)
    assert isinstance(root, KctlGroup)
    ctx = typer.Context(root, info_name="kctl")
    for name, entry in COMMANDS.items():
        real, summary = entry.load(name), entry.summary(name)
        assert real.name == summary.name == name
        for limit in (45, 200):
            assert summary.get_short_help_str(limit) == real.get_short_help_str(limit), name
        listed = summary.short_help or summary.help or ""
        assert listed == (real.short_help or (real.help or "").split("\n\n")[0]), name
        assert not real.hidden and not real.deprecated and not getattr(real, "rich_help_panel", None)
        assert type(root.get_command(ctx, name)) is type(real)
