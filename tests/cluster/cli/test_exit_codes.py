"""Bad input gets one clear line on stderr and a documented exit code, never a traceback."""

import time

import pytest
from typer.testing import CliRunner

from kctl.main import app
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import free_port
from tests.kctl.cli import run_kctl

NOWHERE = f"127.0.0.1:{free_port()}"  # nothing listens; these commands fail before connecting


def invoke(args, env, input=None):
    return CliRunner().invoke(app, args, input=input, env=env)


@pytest.mark.unit
@pytest.mark.parametrize(
    "args, code",
    [
        (["consume", "t", "-b", NOWHERE, "-o", "yesterday"], ExitCode.INVALID_INPUT),
        (["consume", "t", "-b", NOWHERE, "-o", "@1h"], ExitCode.INVALID_INPUT),
        (["consume", "t", "-b", NOWHERE, "-f", "%q"], ExitCode.INVALID_INPUT),
        (["consume", "t", "-b", NOWHERE, "-p", "zero"], ExitCode.INVALID_INPUT),
        (["consume", "t", "-b", NOWHERE, "-f", "%k", "--json"], ExitCode.USAGE),
        (["consume", "t", "-b", "localhost"], ExitCode.INVALID_INPUT),
        (["consume", "t", "-b", NOWHERE, "-X", "no.such.setting=1"], ExitCode.INVALID_INPUT),
        (["consume", "t", "-b", NOWHERE, "-X", "novalue"], ExitCode.INVALID_INPUT),
        (["produce", "t", "-b", NOWHERE, "-k", "a", "-K", ":"], ExitCode.USAGE),
        (["produce", "t", "-b", NOWHERE, "-K", ""], ExitCode.INVALID_INPUT),
        (["produce", "t", "-b", NOWHERE, "-H", "noequals"], ExitCode.INVALID_INPUT),
        (["produce", "t", "-b", NOWHERE, "--file", "/nonexistent/records.txt"], ExitCode.INVALID_INPUT),
        (["produce", "t", "-b", NOWHERE, "--txn-size", "10"], ExitCode.USAGE),
        (
            ["produce", "t", "-b", NOWHERE, "--transactional-id", "x", "--txn-size", "0"],
            ExitCode.INVALID_INPUT,
        ),
        (["produce", "t", "-b", NOWHERE, "--transactional-id", ""], ExitCode.INVALID_INPUT),
        (["produce", "t", "-b", NOWHERE, "--transactional-id", "x", "--acks", "1"], ExitCode.USAGE),
        (["bench", "produce", "-t", "t", "-b", NOWHERE, "--txn-size", "10"], ExitCode.USAGE),
        (["topic", "create", "bad/name", "-b", NOWHERE], ExitCode.INVALID_INPUT),
        (["topic", "create", "t", "-p", "0", "-b", NOWHERE], ExitCode.INVALID_INPUT),
        (["topic", "create", "t", "-c", "retention.ms", "-b", NOWHERE], ExitCode.INVALID_INPUT),
        (["topic", "alter-config", "t", "-b", NOWHERE], ExitCode.USAGE),
        (["consume", "t", "-b", NOWHERE, "-g", "g", "-o", "5"], ExitCode.USAGE),
        (["consume", "t", "-b", NOWHERE, "-g", "g", "-e"], ExitCode.USAGE),
        (["consume", "t", "-b", NOWHERE, "-g", "g", "-p", "0"], ExitCode.USAGE),
        (["consume", "t", "-b", NOWHERE, "--commit", "before"], ExitCode.USAGE),
        (["group", "reset-offsets", "g", "-b", NOWHERE], ExitCode.USAGE),
        (["group", "reset-offsets", "g", "--to-earliest", "--to-latest", "-b", NOWHERE], ExitCode.USAGE),
        (
            ["group", "reset-offsets", "g", "--to-datetime", "yesterday", "-b", NOWHERE],
            ExitCode.INVALID_INPUT,
        ),
        (
            ["group", "reset-offsets", "g", "--to-earliest", "--topic", "t:", "-b", NOWHERE],
            ExitCode.INVALID_INPUT,
        ),
        (["cluster", "up", "-o", "no.such.config=1"], ExitCode.INVALID_INPUT),
        (["cluster", "up", "-o", "broker.session.timeout.ms=soon"], ExitCode.INVALID_INPUT),
        (["topic", "list"], ExitCode.UNREACHABLE),  # no local cluster, no -b
        (["broker", "list"], ExitCode.UNREACHABLE),
        (["broker", "kill", "1"], ExitCode.UNREACHABLE),
        (["watch", "--once"], ExitCode.UNREACHABLE),
        (["cluster", "status"], ExitCode.UNREACHABLE),
        (["cluster", "down"], ExitCode.UNREACHABLE),
    ],
)
def test_bad_input_is_one_line_and_a_documented_code(args, code, isolated_env):
    result = invoke(args, isolated_env)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kctl: error: "), result.stderr
    assert result.stdout == ""


@pytest.mark.unit
@pytest.mark.parametrize(
    "args",
    [
        ["consume"],
        ["consume", "t", "--bogus"],
        ["bench", "produce"],
        ["bench", "produce", "-t", "x", "--records", "0"],
        ["consume", "t", "--isolation", "dirty"],
    ],
)
def test_usage_errors_exit_2(args, isolated_env):
    result = invoke(args, isolated_env)
    assert result.exit_code == ExitCode.USAGE
    assert "Traceback" not in result.output


@pytest.mark.cluster
@pytest.mark.interop
@pytest.mark.parametrize("args", [["consume", "t", "-e"], ["produce", "t"], ["topic", "list"]])
def test_unreachable_cluster_fails_within_seconds(args, isolated_env):
    started = time.monotonic()
    result = run_kctl(
        *args, "-b", f"127.0.0.1:{free_port()}", "--timeout", "1", input=b"x\n", env=isolated_env
    )
    assert result.returncode == ExitCode.UNREACHABLE, result.stderr
    assert time.monotonic() - started < 8
    assert result.stderr.startswith("kctl: error: cannot reach the cluster"), result.stderr


@pytest.mark.cluster
@pytest.mark.interop
def test_unreachable_with_default_timeout(isolated_env):
    started = time.monotonic()
    result = run_kctl("consume", "t", "-b", f"127.0.0.1:{free_port()}", env=isolated_env)
    assert result.returncode == ExitCode.UNREACHABLE
    assert time.monotonic() - started < 12
