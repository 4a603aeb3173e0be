"""`kctl ... --help` answers from the help cache (kctl.shell.helpcache): the page printed again
is byte for byte the one rendered, it costs no import of Typer or Rich, and only plain help
requests that succeeded are kept. A shell's completion request (TAB) is answered the same way."""

import os
import subprocess
import sys

import pytest

from kctl.shell import helpcache
from tests.import_probe import imported

pytestmark = pytest.mark.unit


def kctl(args: list[str], cache_home, **env: str) -> subprocess.CompletedProcess:
    """The kctl executable's entry point in a fresh interpreter (kctl is only imported: a
    help page starts no cluster)."""
    code = f"import sys\nsys.argv = ['kctl', *{args!r}]\nfrom kctl.executable import main\nmain()"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache_home), **env},
        timeout=60,
        check=False,
    )


def rendered(args: list[str], **env: str) -> bytes:
    """The page as Typer renders it, without the cache."""
    code = f"from kctl.main import app\napp({args!r}, prog_name='kctl')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env={**os.environ, **env}, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("args", [["--help"], ["topic", "create", "--help"], ["cluster", "up", "-h"]])
def test_a_cached_page_is_the_rendered_page(args, tmp_path):
    first, second = kctl(args, tmp_path), kctl(args, tmp_path)
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout == rendered(args)
    assert len(list((tmp_path / "kctl" / "help").iterdir())) == 1


def test_the_page_for_another_width_is_rendered_for_it(tmp_path):
    narrow, wide = kctl(["topic", "--help"], tmp_path, COLUMNS="60"), kctl(["topic", "--help"], tmp_path)
    assert narrow.stdout == rendered(["topic", "--help"], COLUMNS="60") != wide.stdout
    assert kctl(["topic", "--help"], tmp_path, COLUMNS="60").stdout == narrow.stdout


def test_a_cached_page_imports_neither_typer_nor_rich(tmp_path):
    kctl(["produce", "--help"], tmp_path)
    code = "import sys\nsys.argv = ['kctl', 'produce', '--help']\nfrom kctl.executable import main\nmain()"
    assert imported(code, ("typer", "rich", "kctl.main"), {"XDG_CACHE_HOME": str(tmp_path)}) == []


def completion(words: str, cword: int, shell: str = "bash") -> dict[str, str]:
    """What a shell's completion function sets when it runs kctl for a TAB."""
    if shell == "bash":
        return {"_KCTL_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    return {
        "_KCTL_COMPLETE": f"complete_{shell}",
        "_TYPER_COMPLETE_ARGS": words,
        "_TYPER_COMPLETE_FISH_ACTION": "get-args",
    }


def rendered_completion(**env: str) -> bytes:
    """The completions as Typer answers them, without the cache."""
    code = "from kctl.main import app\napp(prog_name='kctl')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env={**os.environ, **env}, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("words", "cword", "shell", "expected"),
    [
        ("kctl to", 1, "bash", b"topic"),
        ("kctl topic cr", 2, "bash", b"create"),
        ("kctl learn run par", 3, "bash", b"partitions"),
        ("kctl produce t --ke", 3, "zsh", b"--key"),
        ("kctl cluster st", 2, "fish", b"status"),
    ],
)
def test_a_cached_completion_is_the_one_typer_gives(words, cword, shell, expected, tmp_path):
    env = completion(words, cword, shell)
    first, second = kctl([], tmp_path, **env), kctl([], tmp_path, **env)
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout == rendered_completion(**env)
    assert expected in first.stdout


def test_completions_for_other_words_are_kept_apart(tmp_path):
    topic = kctl([], tmp_path, **completion("kctl to", 1))
    cluster = kctl([], tmp_path, **completion("kctl cl", 1))
    assert b"topic" in topic.stdout and b"cluster" in cluster.stdout and b"topic" not in cluster.stdout
    assert kctl([], tmp_path, **completion("kctl cl", 1)).stdout == cluster.stdout


def test_a_cached_completion_imports_neither_typer_nor_rich(tmp_path):
    env = completion("kctl to", 1)
    kctl([], tmp_path, **env)
    code = "import sys\nsys.argv = ['kctl']\nfrom kctl.executable import main\nmain()"
    assert imported(code, ("typer", "rich", "kctl.main"), {"XDG_CACHE_HOME": str(tmp_path), **env}) == []


def test_a_failed_help_request_is_not_kept(tmp_path):
    refused = kctl(["tpoic", "--help"], tmp_path)
    assert refused.returncode == 2 and b"No such command" in refused.stderr
    assert not (tmp_path / "kctl" / "help").exists() or not list((tmp_path / "kctl" / "help").iterdir())


@pytest.mark.parametrize(
    ("args", "is_help"),
    [
        (["--help"], True),
        (["-h"], True),
        (["rest-proxy", "up", "--help"], True),
        (["produce", "t", "--key", "-h"], False),  # -h is a value here
        (["produce", "my.topic", "--help"], False),  # not a command name: not worth a page each
        (["topic", "--help", "create"], False),
        ([], False),
    ],
)
def test_only_command_names_then_a_help_flag_count_as_a_help_request(args, is_help):
    assert helpcache.is_help_request(args) is is_help


def test_editing_adding_or_removing_a_source_file_changes_the_fingerprint(tmp_path):
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "a.py"
    module.write_text("x = 1\n")
    os.utime(module, ns=(1_000_000_000, 1_000_000_000))
    before = helpcache._fingerprint(tmp_path)
    os.utime(module, ns=(2_000_000_000, 2_000_000_000))
    edited = helpcache._fingerprint(tmp_path)
    (tmp_path / "pkg" / "b.py").write_text("")
    os.utime(tmp_path / "pkg" / "b.py", ns=(1_000_000_000, 1_000_000_000))
    added = helpcache._fingerprint(tmp_path)
    assert len({before, edited, added}) == 3
