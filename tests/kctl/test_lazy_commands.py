"""kctl starts without importing its heavy clients: `kctl --help` and TAB completion must not
pay for librdkafka, kafka-python, PySpark, matplotlib or the broker (docs/performance.md)."""

import pytest
import typer
from typer.testing import CliRunner

from kctl.main import COMMANDS, KctlGroup, app
from tests.import_probe import imported

pytestmark = pytest.mark.unit

HEAVY = ("confluent_kafka", "kafka", "pyspark", "matplotlib", "brokerd")


def test_importing_the_command_tree_imports_no_client():
    assert imported("import kctl.main", HEAVY) == []


def test_completing_a_command_name_imports_no_client():
    env = {"COMP_WORDS": "kctl to", "COMP_CWORD": "1", "_KCTL_COMPLETE": "complete_bash"}
    assert imported("from kctl.main import app\napp(prog_name='kctl')", HEAVY, env) == []


def test_root_help_imports_no_client():
    assert imported("from kctl.main import app\napp(['--help'], prog_name='kctl')", HEAVY) == []


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


def test_a_mistyped_command_is_still_answered_with_the_nearest_name():
    result = CliRunner().invoke(app, ["tpoic"], prog_name="kctl", env={"COLUMNS": "120"})
    assert result.exit_code == 2
    assert "No such command 'tpoic'. Did you mean 'topic'?" in result.output


def test_finding_the_local_brokers_reads_nothing_of_the_metadata_log(tmp_path):
    """`kctl produce` and `kctl consume` look up the local brokers' addresses before anything:
    that takes their registrations, not the metadata log's modules."""
    code = (
        "from pathlib import Path\n"
        "from kctl.kafka.bootstrap import local_servers\n"
        "from kctl.shell.errors import KctlError\n"
        f"try:\n    local_servers(Path({str(tmp_path)!r}))\nexcept KctlError:\n    pass\n"
    )
    watched = ("brokerd.state.broker_registrations", "brokerd.metadata", "brokerd.state.cluster_state")
    assert imported(code, watched) == ["brokerd.state.broker_registrations"]
