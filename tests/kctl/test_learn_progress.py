"""The learner's progress file: a lesson counts as completed once a run ends with every check
holding, the best prediction score is kept across runs, and demo runs (--auto) or runs that
stopped early leave the scores alone. Runs are built from a real lesson's questions."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from kctl.learn import catalogue, progress
from kctl.learn.lesson import Asked, Check, Checked, Observed, Run

pytestmark = pytest.mark.unit


def a_run(mode: str, answers: Sequence[str | None], held: bool = True, finished: bool = True) -> Run:
    lesson = catalogue.find("isr")
    run = Run(lesson, mode)
    run.entries += [Asked(ask, n, given) for n, (ask, given) in enumerate(zip(lesson.questions, answers), 1)]
    run.entries.append(Checked(Check("a claim", lambda lab: Observed(held, "")), Observed(held, "seen")))
    run.finished = finished
    return run


def test_progress_keeps_the_best_score_and_completion(tmp_path, monkeypatch):
    monkeypatch.setenv("KCTL_HOME", str(tmp_path / "home"))
    right = [q.right for q in catalogue.find("isr").questions]
    assert progress.load() == {}
    progress.record(a_run("answers", ["a", right[1], right[2]], held=False))
    mine = progress.load()["isr"]
    assert mine["runs"] == 1 and not mine["completed"] and mine["best_score"] == 2
    progress.record(a_run("answers", right))
    progress.record(a_run("answers", ["a", "a", "a"]))
    mine = progress.load()["isr"]
    assert mine["runs"] == 3 and mine["completed"]
    assert (mine["best_score"], mine["last_score"], mine["questions"]) == (3, 0, 3)
    progress.record(a_run("auto", [None, None, None]))
    progress.record(a_run("answers", right, finished=False))
    mine = progress.load()["isr"]
    assert mine["runs"] == 5 and (mine["best_score"], mine["last_score"]) == (3, 0)
    doc = json.loads((tmp_path / "home" / "learn.json").read_text())
    assert set(doc["lessons"]) == {"isr"}


def test_an_unreadable_progress_file_is_a_fresh_start(tmp_path, monkeypatch):
    monkeypatch.setenv("KCTL_HOME", str(tmp_path))
    (tmp_path / "learn.json").write_text("{not json")
    assert progress.load() == {}
    progress.record(a_run("answers", [q.right for q in catalogue.find("isr").questions]))
    assert progress.load()["isr"]["completed"]
