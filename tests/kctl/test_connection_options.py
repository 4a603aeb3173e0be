"""`@connection_options()` gives a command the five connection options where its `options`
parameter stands, and hands it what the command line (or the environment) said, in one
ConnectionOptions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from kctl.gendocs import PROG, walk
from kctl.main import app as kctl
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.options import DEFAULT_TIMEOUT

pytestmark = pytest.mark.unit

FIVE = ["bootstrap", "cluster_dir", "timeout", "settings", "command_config"]


def _recording(received: list[ConnectionOptions]) -> typer.Typer:
    app = typer.Typer(add_completion=False)

    @app.command()
    @connection_options()
    def show(
        topic: Annotated[str, typer.Argument()],
        options: ConnectionOptions = NO_CONNECTION_OPTIONS,
        json_output: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        """Keep what the options were."""
        received.append(options)

    return app


def test_the_command_gets_the_options_given(tmp_path):
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=PLAINTEXT\n")
    received: list[ConnectionOptions] = []
    args = ["t", "-X", "a=1", "--dir", "d", "-b", "h:9", "-F", str(config), "--timeout", "2", "-X", "b=2"]
    result = CliRunner().invoke(_recording(received), [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert received == [ConnectionOptions("h:9", Path("d"), 2.0, ("a=1", "b=2"), config)]


def test_no_options_given_are_the_defaults_and_the_environments(monkeypatch):
    received: list[ConnectionOptions] = []
    monkeypatch.delenv("KCTL_COMMAND_CONFIG", raising=False)
    monkeypatch.delenv("KCTL_TIMEOUT", raising=False)
    assert CliRunner().invoke(_recording(received), ["t"]).exit_code == 0
    assert CliRunner().invoke(_recording(received), ["t"], env={"KCTL_TIMEOUT": "7"}).exit_code == 0
    assert received == [NO_CONNECTION_OPTIONS, ConnectionOptions(timeout=7.0)]
    assert NO_CONNECTION_OPTIONS.timeout == DEFAULT_TIMEOUT


def test_the_five_stand_where_the_options_parameter_stands():
    command = typer.main.get_command(_recording([]))
    assert [p.name for p in command.params] == ["topic", *FIVE, "json_output"]


def test_a_command_without_an_options_parameter_is_refused():
    def plain(topic: str) -> None: ...

    with pytest.raises(TypeError, match="one ConnectionOptions parameter"):
        connection_options()(plain)


def test_every_kctl_command_with_bootstrap_has_the_five_together():
    root = typer.main.get_command(kctl)
    with_options = 0
    for command, _ctx in walk(root, typer.Context(root, info_name=PROG)):
        names = [p.name for p in command.params]
        if "bootstrap" in names and "settings" in names:
            start = names.index("bootstrap")
            assert names[start : start + 5] == FIVE, command.name
            with_options += 1
    assert with_options == 30
