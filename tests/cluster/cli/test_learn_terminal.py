"""`kctl learn run` on a terminal: the questions are asked with a prompt, the learner's typed
answers are checked (a choice that does not exist is asked again), and the lesson goes on to
its end on real brokers. The terminal is a real pseudo-terminal, as a learner's would be; the
projector demo (`--auto`) plays in a tmux window whose screen is captured.
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kctl.learn import catalogue
from tests.cluster_harness import wait_until
from tests.kctl.cli import kctl_command, kctl_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PROMPT = b"Your prediction"


class Terminal:
    """A process on the slave side of a pty; what it writes is collected from the master side."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, start_new_session=True
        )
        os.close(slave)
        self.screen = b""

    def read_until(self, text: bytes, start: int, timeout: float) -> int:
        """Where `text` first appears in the output after `start`, waiting up to `timeout`."""
        deadline = time.monotonic() + timeout
        while text not in self.screen[start:]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {text!r}; output so far:\n{self._tail()}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                self._read()
        return self.screen.index(text, start)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def finish(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            if select.select([self.master], [], [], 0.2)[0]:
                self._read()
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.master)

    def _read(self) -> None:
        try:
            self.screen += os.read(self.master, 65536)
        except OSError:  # the child closed the terminal
            time.sleep(0.05)

    def _tail(self) -> str:
        return self.screen[-3000:].decode(errors="replace")


def test_a_learner_answers_on_the_terminal(tmp_path: Path):
    lesson = catalogue.find("partitions")
    notes = tmp_path / "notes.md"
    env = kctl_env({"KCTL_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path), "COLUMNS": "100"})
    terminal = Terminal(kctl_command("learn", "run", lesson.name, "--transcript", str(notes)), env)
    typed = []
    try:
        seen = 0
        for number, ask in enumerate(lesson.questions, 1):
            seen = terminal.read_until(f"Question {number}.".encode(), seen, 90)
            seen = terminal.read_until(PROMPT, seen, 30)
            if number == 1:  # a letter that is not a choice is refused, and asked again
                terminal.type("z")
                seen = terminal.read_until(PROMPT, seen + len(PROMPT), 30)
            answer = ask.right if number != 2 else "a"
            terminal.type(answer)
            typed.append(answer)
        status = terminal.finish(90)
    finally:
        terminal.close()
    assert status == 0, terminal._tail()
    text = notes.read_text()
    for number, (ask, given) in enumerate(zip(lesson.questions, typed), 1):
        verdict = "right" if given == ask.right else "wrong"
        assert f"**Question {number}.** {ask.question}" in text
        assert f"Answer given: **{given}** ({verdict})" in text
    assert f"Predictions: {len(typed) - 1} of {len(typed)} right." in text
    assert "Lesson complete" in terminal.screen.decode(errors="replace")


def test_auto_mode_plays_a_lesson_on_a_tmux_screen(tmp_path: Path):
    """The projector demo: `--auto` in a tmux window, read back as the screen shows it."""
    lesson = catalogue.find("high-watermark")
    env = kctl_env({"KCTL_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)})
    done = tmp_path / "status"
    command = (
        f"{shlex.join(kctl_command('learn', 'run', lesson.name, '--auto'))}; echo $? > {done}; sleep 600"
    )
    tmux = ["tmux", "-L", f"kctl-learn-{os.getpid()}", "-f", os.devnull]
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "110", "-y", "50", "-s", "demo", command], env=env, check=True
    )
    try:
        wait_until(done.exists, 150, "the --auto lesson to finish")
        screen = subprocess.run(
            [*tmux, "capture-pane", "-p", "-J", "-S", "-3000", "-t", "demo"], capture_output=True, text=True
        ).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    assert done.read_text().strip() == "0", screen[-3000:]
    for number, ask in enumerate(lesson.questions, 1):
        assert f"Question {number}. {ask.question}" in " ".join(screen.split()), screen[-3000:]
    assert "Your prediction" not in screen  # nobody is asked in --auto
    assert "Lesson complete; its cluster is stopped and removed." in screen
