"""`kctl learn list|run`: guided lessons on real brokers, each on a cluster of its own."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from kctl.learn import catalogue, progress, transcript
from kctl.learn.lesson import Answers, Auto, Interactive, give, parse_answers
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import Json

app = typer.Typer(
    help="Guided lessons on real brokers: each lesson starts a cluster of its own, asks you to "
    "predict what Kafka will do, makes it happen, shows it in `kctl watch`'s view, checks it, "
    "and explains it. `kctl learn list` shows the lessons and your progress.",
    short_help="Guided lessons on real brokers (list, run).",
    no_args_is_help=True,
)


@app.command("list")
def list_lessons(json_output: Json = False) -> None:
    """Show the lessons, what each one shows, and your progress (completed, best score).

    Progress is kept in learn.json in kctl's directory ($KCTL_HOME, else ~/.kctl).
    """
    done = progress.load()
    rows = []
    for number, lesson in catalogue.numbered():
        mine = done.get(lesson.name, {})
        rows.append(
            {
                "number": number,
                "name": lesson.name,
                "title": lesson.title,
                "summary": lesson.summary,
                "questions": len(lesson.questions),
                "completed": bool(mine.get("completed")),
                "best_score": mine.get("best_score"),
                "runs": int(mine.get("runs", 0)),
            }
        )
    if json_output:
        console.print_json({"progress_file": str(progress.path()), "lessons": rows})
        return
    console.print_table(
        ["#", "lesson", "title", "questions", "done", "best"],
        [
            [
                r["number"],
                r["name"],
                r["title"],
                r["questions"],
                "yes" if r["completed"] else None,
                None if r["best_score"] is None else f"{r['best_score']}/{r['questions']}",
            ]
            for r in rows
        ],
    )
    completed = sum(1 for r in rows if r["completed"])
    console.info(f"{completed} of {len(rows)} lessons completed. Start one with `kctl learn run NAME`.")


def _complete_lesson(incomplete: str) -> list[str]:
    return [lesson.name for _, lesson in catalogue.numbered() if lesson.name.startswith(incomplete)]


@app.command()
def run(
    lesson_name: Annotated[
        str,
        typer.Argument(
            metavar="LESSON",
            help="The lesson's name or number, as `kctl learn list` shows them.",
            autocompletion=_complete_lesson,
            show_default=False,
        ),
    ],
    auto: Annotated[
        bool,
        typer.Option("--auto", help="Projector demo: ask nobody, reveal each answer after a short pause."),
    ] = False,
    answers: Annotated[
        str | None,
        typer.Option(
            "--answers",
            metavar="a,c,b",
            show_default=False,
            help="The answers to the lesson's questions, in order (for scripts and tests). A wrong "
            "one is recorded and the lesson goes on, showing the right one.",
        ),
    ] = None,
    transcript_path: Annotated[
        Path | None,
        typer.Option(
            "--transcript",
            metavar="FILE.md",
            show_default=False,
            dir_okay=False,
            help="Write the lesson as Markdown class notes: the questions, the answers given and "
            "the right ones, the watch views and what was observed.",
        ),
    ] = None,
) -> None:
    """Give one lesson on a cluster of its own (a temporary directory, free ports).

    Each question is asked before the experiment that answers it: on the terminal, or not at
    all with --auto, or from --answers. The lesson's brokers are stopped and its directory
    removed when it ends, also on Ctrl-C or failure. Exits 0 when every check on the real
    cluster held (whatever the answers), 1 when one did not.
    """
    lesson = catalogue.find(lesson_name)
    if auto and answers is not None:
        raise KctlError("--auto asks nobody; give either --auto or --answers", ExitCode.USAGE)
    source: Answers
    mode = "auto" if auto else "answers" if answers is not None else "interactive"
    if answers is not None:
        source = parse_answers(answers, lesson)
    elif auto:
        source = Auto()
    else:
        if not sys.stdin.isatty():
            raise KctlError(
                "no terminal to ask the questions on: give --answers a,b,... or --auto", ExitCode.USAGE
            )
        source = Interactive()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        result = give(lesson, source, mode)
    except KeyboardInterrupt:
        console.error("interrupted; the lesson's cluster is stopped")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if transcript_path is not None:
        transcript.write(result, transcript_path)
        console.info(f"Class notes written to {transcript_path}.")
    mine = progress.record(result)
    if result.passed and mode != "auto" and result.answered:
        console.info(f"Progress saved: best score {mine['best_score']}/{mine['questions']}.")
    if not result.passed:
        raise KctlError(result.failure or "a check on the real cluster did not hold", ExitCode.ERROR)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends a lesson the way Ctrl-C does: through the code that stops its cluster."""
    raise KeyboardInterrupt
