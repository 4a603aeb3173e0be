"""The lesson framework: what a lesson is made of, and the runner that gives it.

A lesson is a sequence of steps a teacher would take in front of a class: narrate a little,
ask the class to predict (multiple choice, before the experiment), run the experiment on the
lesson's real brokers, show the slice of `kctl watch` that tells it, check what really
happened, and explain why in the course notes' words. Checks are assertions on the cluster,
not on the script: a check that fails says what was observed instead, and the lesson fails.

The runner asks its questions one of three ways: on the terminal (interactive), not at all
(`--auto`: the answer is revealed after a pause, for a projector), or from a list given up
front (`--answers a,c,b`: a wrong answer is recorded and the lesson goes on, showing the
right one). Everything said, asked, answered, shown and checked is kept as entries, from which
kctl.learn.transcript writes the class notes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.prompt import Prompt
from rich.text import Text

from kctl.learn.lab import Lab
from kctl.learn.seeds import cite
from kctl.shell import console
from kctl.shell.console import Section
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

LETTERS = "abcdefgh"
AUTO_THINK_S = 2.0  # --auto: time to read a question before its answer is revealed
AUTO_READ_S = 1.0  # --auto: time to read an explanation


@dataclass(frozen=True)
class Narrate:
    """A few sentences of the story."""

    text: str


@dataclass(frozen=True)
class Ask:
    """A prediction question, asked before the experiment that answers it."""

    question: str
    choices: tuple[str, ...]
    right: str  # the letter of the right choice
    seed: str | None = None  # the course notes whose "Think first" it comes from


@dataclass(frozen=True)
class Experiment:
    """Something done to the real cluster; returns one line saying what was done and seen.
    What the checks need goes into `lab.seen`."""

    title: str
    run: Callable[[Lab], str]


@dataclass(frozen=True)
class Show:
    """The slice of `kctl watch` that tells the experiment, and the changes it narrated."""

    caption: str
    topic: str | None
    group: str | None = None
    brokers: bool = True


@dataclass(frozen=True)
class Observed:
    """What a check found: whether the claim held, and the numbers that say so."""

    held: bool
    what: str


@dataclass(frozen=True)
class Check:
    """A claim about what really happened, verified on the cluster (or on `lab.seen`)."""

    claim: str
    verify: Callable[[Lab], Observed]


@dataclass(frozen=True)
class Explain:
    """Why, in the course notes' words: `quote` is quoted or paraphrased from `seed`."""

    quote: str
    seed: str
    comment: str = ""  # what the experiment adds to the notes, in the lesson's own words


Step = Narrate | Ask | Experiment | Show | Check | Explain


@dataclass(frozen=True)
class Lesson:
    name: str
    title: str
    summary: str  # one line for `kctl learn list`
    seeds: tuple[str, ...]
    brokers: int
    broker_config: dict[str, str]
    steps: tuple[Step, ...]
    security_protocol: str = "PLAINTEXT"  # as `kctl cluster up --security-protocol`

    @property
    def questions(self) -> list[Ask]:
        return [s for s in self.steps if isinstance(s, Ask)]


# -- how questions are answered ------------------------------------------------------------


class Answers(Protocol):
    """Where the answer to each question comes from."""

    def answer(self, ask: Ask, number: int) -> str | None:
        """The letter given, or None when the mode asks nobody (`--auto`)."""
        ...


class Interactive:
    """A Rich prompt on the terminal for each question."""

    def answer(self, ask: Ask, number: int) -> str | None:
        letters = list(LETTERS[: len(ask.choices)])
        return Prompt.ask("Your prediction", choices=letters, console=_out())


class Auto:
    """A projector demo: nobody is asked; the class thinks for a moment, then sees the answer."""

    def answer(self, ask: Ask, number: int) -> str | None:
        time.sleep(AUTO_THINK_S)
        return None


class Scripted:
    """Answers given up front, in order (`--answers a,c,b`)."""

    def __init__(self, letters: Sequence[str]) -> None:
        self.letters = list(letters)

    def answer(self, ask: Ask, number: int) -> str | None:
        return self.letters[number - 1]


def parse_answers(text: str, lesson: Lesson) -> Scripted:
    """`a,c,b`: one letter per question of the lesson, each one of that question's choices."""
    given = [a.strip().lower() for a in text.split(",") if a.strip()]
    questions = lesson.questions
    if len(given) != len(questions):
        raise KctlError(
            f"lesson {lesson.name} asks {len(questions)} question(s); --answers gave {len(given)}",
            ExitCode.USAGE,
        )
    for number, (letter, ask) in enumerate(zip(given, questions), 1):
        allowed = LETTERS[: len(ask.choices)]
        if len(letter) != 1 or letter not in allowed:
            raise KctlError(
                f"answer {number} is {letter!r}: question {number} has choices {', '.join(allowed)}",
                ExitCode.USAGE,
            )
    return Scripted(given)


# -- what a run keeps ------------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    step: Narrate


@dataclass(frozen=True)
class Asked:
    step: Ask
    number: int
    given: str | None  # None: nobody was asked (--auto)

    @property
    def correct(self) -> bool:
        return self.given == self.step.right


@dataclass(frozen=True)
class Ran:
    step: Experiment
    account: str
    seconds: float


@dataclass(frozen=True)
class Shown:
    step: Show
    sections: list[Section]
    changes: list[str]


@dataclass(frozen=True)
class Checked:
    step: Check
    observed: Observed


@dataclass(frozen=True)
class Explained:
    step: Explain


Entry = Said | Asked | Ran | Shown | Checked | Explained


@dataclass
class Run:
    """One run of a lesson: its entries, and how it ended."""

    lesson: Lesson
    mode: str
    started: float = field(default_factory=time.time)
    entries: list[Entry] = field(default_factory=list)
    failure: str | None = None  # why the lesson stopped before its end
    finished: bool = False

    @property
    def answered(self) -> list[Asked]:
        return [e for e in self.entries if isinstance(e, Asked)]

    @property
    def score(self) -> int:
        return sum(1 for e in self.answered if e.correct)

    @property
    def checks(self) -> list[Checked]:
        return [e for e in self.entries if isinstance(e, Checked)]

    @property
    def passed(self) -> bool:
        """Every step ran and every check held on the real cluster."""
        return self.finished and self.failure is None and all(c.observed.held for c in self.checks)


# -- the runner ------------------------------------------------------------------------------


def give(lesson: Lesson, answers: Answers, mode: str) -> Run:
    """Run `lesson` on a cluster of its own, started here and always stopped here."""
    run = Run(lesson, mode)
    out = _out()
    out.print(Panel(Text(lesson.title, style="bold"), subtitle=f"kctl learn run {lesson.name}"))
    out.print(Text(f"Starting a {lesson.brokers}-broker cluster for this lesson...", style="dim"))
    try:
        with Lab(lesson.brokers, lesson.broker_config, lesson.security_protocol) as lab:
            for step in lesson.steps:
                entry = _take(step, lab, answers, run)
                run.entries.append(entry)
                _print(entry, mode)
            run.finished = True
    except KctlError as exc:
        run.failure = exc.message
    except Exception as exc:  # a client error the experiment did not expect: told, not a traceback
        run.failure = f"{type(exc).__name__}: {exc}"
    if run.failure is not None:
        out.print(Text(f"The lesson stopped: {run.failure}", style="bold red"))
    _print_end(run)
    return run


def _take(step: Step, lab: Lab, answers: Answers, run: Run) -> Entry:
    if isinstance(step, Narrate):
        return Said(step)
    if isinstance(step, Ask):
        number = len(run.answered) + 1
        _print_question(step, number)
        return Asked(step, number, answers.answer(step, number))
    if isinstance(step, Experiment):
        began = time.monotonic()
        with _out().status(step.title):
            account = step.run(lab)
        return Ran(step, account, time.monotonic() - began)
    if isinstance(step, Show):
        sections, changes = lab.watch_slice(step.topic, step.group, step.brokers)
        return Shown(step, sections, changes)
    if isinstance(step, Check):
        try:
            observed = step.verify(lab)
        except KctlError as exc:
            observed = Observed(False, exc.message)
        return Checked(step, observed)
    return Explained(step)


def _print_question(step: Ask, number: int) -> None:
    out = _out()
    out.print(Text(f"\nQuestion {number}. {step.question}", style="bold cyan"))
    for letter, choice in zip(LETTERS, step.choices):
        out.print(f"  {letter}) {choice}")
    sys.stdout.flush()


def _print(entry: Entry, mode: str) -> None:
    out = _out()
    if isinstance(entry, Said):
        out.print(Markdown(entry.step.text))
    elif isinstance(entry, Asked):
        right = f"{entry.step.right}) {entry.step.choices[LETTERS.index(entry.step.right)]}"
        if entry.given is None:
            out.print(Text(f"Answer: {right}", style="bold"))
        elif entry.correct:
            out.print(Text(f"{entry.given}: right. Let's see it happen.", style="bold green"))
        else:
            out.print(Text(f"{entry.given}: not quite. The answer is {right}", style="bold yellow"))
    elif isinstance(entry, Ran):
        out.print(Text(f"> {entry.step.title}: ", style="bold").append(entry.account, style=None))
    elif isinstance(entry, Shown):
        out.print(Text(f"kctl watch: {entry.step.caption}", style="bold magenta"))
        for section in entry.sections:
            console.print_section(section)
        for line in entry.changes:
            out.print(Text(f"  * {line}", style="magenta"))
    elif isinstance(entry, Checked):
        mark, style = ("✔", "green") if entry.observed.held else ("✘", "bold red")
        out.print(Text(f"{mark} {entry.step.claim}: ", style=style).append(entry.observed.what, style=None))
    elif isinstance(entry, Explained):
        body = f"> {entry.step.quote}\n\n({cite(entry.step.seed)})"
        if entry.step.comment:
            body += f"\n\n{entry.step.comment}"
        out.print(Panel(Markdown(body), title="Why", title_align="left"))
        if mode == "auto":
            time.sleep(AUTO_READ_S)


def _out() -> Console:
    """The lesson's voice on stdout: wrapped to the terminal (or 80 columns in a pipe), so
    panels and quotes are never cut; tables still go through kctl.shell.console."""
    return Console(highlight=False)


def _print_end(run: Run) -> None:
    out = _out()
    asked = len(run.answered)
    held = sum(1 for c in run.checks if c.observed.held)
    if run.mode != "auto" and asked:
        out.print(Text(f"Predictions: {run.score} of {asked} right.", style="bold"))
    out.print(Text(f"Checks on the real cluster: {held} of {len(run.checks)} held.", style="bold"))
    if run.passed:
        out.print(Text("Lesson complete; its cluster is stopped and removed.", style="green"))
