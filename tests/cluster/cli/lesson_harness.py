"""The processes a lesson started (brokers, its schema registry, its connect worker), found by
their command lines: what the lesson tests check is gone at the end, and the `learner` fixture
(conftest) kills."""

from __future__ import annotations

from pathlib import Path

from tests.kctl.cli import run_kctl


def processes_under(directory: Path, program: bytes) -> list[int]:
    """Pids of processes whose command line has the word `program` (brokerd's arguments, or the
    title `brokerd ARGS` of a broker forked by brokerd.launch) and names a path below
    `directory` (a broker's --cluster-dir, the registry's --lock-file)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if program in cmdline.split() and str(directory).encode() in cmdline:
            found.append(int(entry.name))
    return found


def brokers_under(directory: Path) -> list[int]:
    return processes_under(directory, b"brokerd")


def lesson_processes(directory: Path) -> list[int]:
    services = [processes_under(directory, name) for name in (b"schemaregistry", b"connect")]
    return brokers_under(directory) + [pid for pids in services for pid in pids]


def run_lesson(name: str, answers: str, learner: dict[str, str], notes: Path, timeout: float) -> str:
    """`kctl learn run NAME --answers ANSWERS --transcript NOTES` as a learner runs it; the
    class notes it wrote, once it has ended with exit 0."""
    argv = ("learn", "run", name, "--answers", answers, "--transcript", str(notes))
    result = run_kctl(*argv, env=learner, timeout=timeout)
    assert result.returncode == 0, result.stdout.decode() + result.stderr
    return notes.read_text()
