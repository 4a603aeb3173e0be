"""`kctl verify` refuses what it cannot run before it touches a cluster: one line on stderr and
a documented exit code."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kctl.main import app
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import free_port

pytestmark = pytest.mark.unit

NOWHERE = f"127.0.0.1:{free_port()}"  # nothing listens: each refusal comes before connecting


@pytest.mark.parametrize(
    "args, code, says",
    [
        (["--time-limit", "soon", "--no-faults"], ExitCode.INVALID_INPUT, "invalid --time-limit 'soon'"),
        (["--time-limit", "0s", "--no-faults"], ExitCode.INVALID_INPUT, "invalid --time-limit"),
        (["--rate", "fast", "--no-faults"], ExitCode.INVALID_INPUT, "invalid --rate 'fast'"),
        (["--nemesis", "kill,flood"], ExitCode.INVALID_INPUT, "invalid --nemesis 'kill,flood'"),
        (["--acks", "0", "--no-faults"], ExitCode.USAGE, "acks=0 gets no offsets back"),
        (["--acks", "1", "--txn", "--no-faults"], ExitCode.USAGE, "--txn needs --acks all"),
        (["--fault-count", "20", "--no-faults"], ExitCode.USAGE, "--fault-count needs faults"),
        ([], ExitCode.USAGE, "add --no-faults to verify another cluster"),
    ],
)
def test_refused_before_connecting(args, code, says, isolated_env):
    result = CliRunner().invoke(app, ["verify", "-b", NOWHERE, *args], env=isolated_env)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kctl: error: ") and says in lines[0], result.stderr


def test_a_history_that_cannot_be_written_is_invalid_input(tmp_path, isolated_env):
    path = tmp_path / "no" / "such" / "dir" / "h.jsonl"
    result = CliRunner().invoke(
        app, ["verify", "-b", NOWHERE, "--no-faults", "--history", str(path)], env=isolated_env
    )
    assert result.exit_code == ExitCode.INVALID_INPUT and "cannot write history" in result.stderr


def test_a_missing_history_file_is_a_usage_error(tmp_path, isolated_env):
    result = CliRunner().invoke(app, ["verify", "check", str(tmp_path / "none.jsonl")], env=isolated_env)
    assert result.exit_code == ExitCode.USAGE and "does not exist" in result.stderr
