"""Answers `kctl [COMMAND...] --help`, and the shells' completion requests, from a cache of
what kctl printed before, byte for byte.

Rendering a help page takes Typer's Rich renderer (Rich, its Markdown parser): about 0.25 s of
imports and layout, most of what a `--help` costs. The page depends only on kctl's code, the
versions of Typer and Rich, and what the environment tells Rich about the terminal, so a page
once printed is kept under that key (~/.cache/kctl/help, or $XDG_CACHE_HOME/kctl/help) and
printed again without importing either. Any change to kctl's source files, to Typer or Rich,
or to the terminal's width, colours or locale makes a new key.

Only plain help requests are cached: command names (words) followed by `--help` or `-h`, as
in `kctl topic create --help`. Completion requests are too (a TAB in bash, zsh or fish runs kctl
with _KCTL_COMPLETE set and the words typed in COMP_WORDS or _TYPER_COMPLETE_ARGS): every
answer kctl completes with comes from its code (command and option names, lesson names), never
from a cluster, so the words and the cursor's position are the rest of the key. Anything else,
or a request that did not end with exit code 0, runs as usual and is not kept.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

HELP_FLAGS = ("--help", "-h")
# what Rich and Typer read to decide width, colours and characters (and kctl's own settings)
_RENDERING_ENV = ("COLUMNS", "LINES", "TERM", "COLOR", "TTY", "TYPER", "RICH", "KCTL", "JUPYTER", "WIDTH")
_LOCALE_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "PYTHONIOENCODING", "HOME", "GITHUB_ACTIONS")
# bash passes the words and the cursor's index; zsh and fish the words up to the cursor
_COMPLETION_ENV = (
    "_KCTL_COMPLETE",
    "COMP_WORDS",
    "COMP_CWORD",
    "_TYPER_COMPLETE_ARGS",
    "_TYPER_COMPLETE_FISH_ACTION",
)
_KEEP_ENTRIES = 256  # a cache left by many versions of kctl is pruned to its newest pages


def is_help_request(args: Sequence[str]) -> bool:
    """Command names, then a help flag: what prints a help page whatever the names are."""
    return bool(args) and args[-1] in HELP_FLAGS and all(_is_word(a) for a in args[:-1])


def is_completion_request(env: Mapping[str, str] = os.environ) -> bool:
    """A shell asking for the completions of the words it passes in COMP_WORDS."""
    return env.get("_KCTL_COMPLETE", "").startswith("complete_")


def _is_word(arg: str) -> bool:
    return arg.replace("-", "").isalnum() and not arg.startswith("-")


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "kctl" / "help"


def key(args: Sequence[str], stdout: TextIO) -> str:
    """What the page printed for `args` on `stdout` depends on (see the module's docstring)."""
    import hashlib  # for help requests only: every other command starts without it

    digest = hashlib.sha256()
    completion = [f"{name}={os.environ.get(name, '')}" for name in _COMPLETION_ENV]
    for part in (
        *args,
        str(_is_terminal(stdout)),
        str(_terminal_size(stdout)),
        *_rendering_env(),
        *completion,
    ):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for root in _code_roots():
        digest.update(_fingerprint(root).encode() + b"\0")
    return digest.hexdigest()


def _rendering_env() -> list[str]:
    return sorted(
        f"{name}={value}"
        for name, value in os.environ.items()
        if any(part in name for part in _RENDERING_ENV) or name in _LOCALE_ENV or name.startswith("LC_")
    )


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _terminal_size(stream: TextIO) -> tuple[int, int] | None:
    try:
        return tuple(os.get_terminal_size(stream.fileno())) if _is_terminal(stream) else None  # type: ignore[return-value]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def _code_roots() -> list[Path]:
    """kctl's package and those of Typer and Rich (found without importing them)."""
    from importlib.util import find_spec

    roots = [Path(__file__).resolve().parents[1]]
    for name in ("typer", "rich"):
        spec = find_spec(name)
        if spec is not None and spec.origin is not None:
            roots.append(Path(spec.origin).parent)
    return roots


def _fingerprint(root: Path) -> str:
    """The newest modification time and the number of the package's source files: an edit,
    an upgrade, an added or a removed file each change it."""
    newest, count = 0, 0
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    newest, count = max(newest, entry.stat().st_mtime_ns), count + 1
    return f"{root}:{newest}:{count}"


def page_key(args: Sequence[str]) -> str | None:
    """The cache key of a help or completion request answered on stdout; None for any other
    command line."""
    return key(args, sys.stdout) if is_help_request(args) or is_completion_request() else None


def cached_page(page_key: str | None) -> bytes | None:
    """The page kctl printed before under this key, or None."""
    if page_key is None:
        return None
    try:
        return (cache_dir() / page_key).read_bytes()
    except OSError:
        return None


class _Tee(io.TextIOBase):
    """stdout, with a copy of what is written to it; a terminal still looks like one to Rich."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return _is_terminal(self._stream)

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding


@contextmanager
def recording(page_key: str | None) -> Iterator[None]:
    """Run a command; when it was a help or completion request (it has a key) that ended with
    exit code 0, keep its answer."""
    if page_key is None:
        yield
        return
    stdout = sys.stdout
    tee = _Tee(stdout)
    sys.stdout = tee  # type: ignore[assignment]
    try:
        yield
    except SystemExit as end:
        if end.code in (0, None):
            _store(page_key, tee.copy.getvalue().encode(stdout.encoding or "utf-8", "surrogateescape"))
        raise
    finally:
        sys.stdout = stdout


def _store(page_key: str, page: bytes) -> None:
    """Write the page atomically; a cache that cannot be written is simply not used."""
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{page_key}.{os.getpid()}"
        temporary.write_bytes(page)
        temporary.replace(directory / page_key)
        _prune(directory)
    except OSError:
        pass


def _prune(directory: Path) -> None:
    entries = sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[: max(0, len(entries) - _KEEP_ENTRIES)]:
        old.unlink(missing_ok=True)
