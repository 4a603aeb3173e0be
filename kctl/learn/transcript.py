"""A lesson run as Markdown class notes (`kctl learn run --transcript FILE.md`).

The notes follow the lesson: the story, each question with its choices, the answer given and
the right one, what each experiment did, the watch view as plain text, every check with what
was observed on the real brokers, and the explanations with the course notes they come from.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text

from kctl.learn.lesson import LETTERS, Asked, Checked, Entry, Explained, Ran, Run, Said, Shown
from kctl.learn.seeds import cite
from kctl.shell.console import Cell, Section


def write(run: Run, path: Path) -> None:
    path.write_text(markdown(run))


def markdown(run: Run) -> str:
    lesson = run.lesson
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run.started))
    lines = [
        f"# {lesson.title}",
        "",
        f"`kctl learn run {lesson.name}` ({run.mode}), {when}, on a {lesson.brokers}-broker "
        f"brokerd cluster of its own. From the course notes: "
        + "; ".join(cite(s) for s in lesson.seeds)
        + ".",
        "",
    ]
    if lesson.broker_config:
        settings = ", ".join(f"`{k}={v}`" for k, v in sorted(lesson.broker_config.items()))
        lines += [f"Broker settings: {settings}.", ""]
    for entry in run.entries:
        lines += _entry(entry) + [""]
    lines += _summary(run)
    return "\n".join(lines).rstrip() + "\n"


def _entry(entry: Entry) -> list[str]:
    if isinstance(entry, Said):
        return [entry.step.text]
    if isinstance(entry, Asked):
        ask = entry.step
        right = f"{ask.right}) {ask.choices[LETTERS.index(ask.right)]}"
        lines = [f"**Question {entry.number}.** {ask.question}", ""]
        lines += [f"- {letter}) {choice}" for letter, choice in zip(LETTERS, ask.choices)]
        lines.append("")
        if entry.given is None:
            lines.append(f"Right answer: **{right}**")
        else:
            verdict = "right" if entry.correct else "wrong"
            lines.append(f"Answer given: **{entry.given}** ({verdict}). Right answer: **{right}**")
        return lines
    if isinstance(entry, Ran):
        return [f"**Experiment: {entry.step.title}.** {entry.account} ({entry.seconds:.1f} s)"]
    if isinstance(entry, Shown):
        body = [f"`kctl watch`: {entry.step.caption}", "", "```"]
        for section in entry.sections:
            body += plain_table(section) + [""]
        if entry.changes:
            body += ["EVENTS"] + [f"  {line}" for line in entry.changes]
        return body + ["```"]
    if isinstance(entry, Checked):
        mark = "✔ held" if entry.observed.held else "✘ did NOT hold"
        return [f"**Check ({mark}):** {entry.step.claim}. Observed: {entry.observed.what}."]
    assert isinstance(entry, Explained)
    lines = [f"> {entry.step.quote}", ">", f"> ({cite(entry.step.seed)})"]
    if entry.step.comment:
        lines += ["", entry.step.comment]
    return ["**Why.**", ""] + lines


def _summary(run: Run) -> list[str]:
    held = sum(1 for c in run.checks if c.observed.held)
    lines = ["## Result", ""]
    if run.mode != "auto" and run.answered:
        lines.append(f"- Predictions: {run.score} of {len(run.answered)} right.")
    lines.append(f"- Checks on the real cluster: {held} of {len(run.checks)} held.")
    if run.failure is not None:
        lines.append(f"- The lesson stopped early: {run.failure}")
    return lines


def plain_table(section: Section) -> list[str]:
    """A watch section as aligned plain text, as `kctl watch` prints it into a pipe."""
    out = [section.title] if section.title else []
    rows = [[c.upper() for c in section.columns]] + [[_plain(c) for c in row] for row in section.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(section.columns))]
    return out + ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _plain(value: Cell) -> str:
    if value is None:
        return "-"
    return value.plain if isinstance(value, Text) else str(value)
