"""`kctl learn`: every lesson runs end to end on real brokers with scripted answers (some
wrong), writes class notes that hold the questions, the answers and what the real cluster
did, records the learner's progress, and leaves no broker process behind, also when the
learner presses Ctrl-C in the middle of a lesson.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from kctl.learn import catalogue
from kctl.learn.lesson import LETTERS
from tests.cluster.cli.lesson_harness import brokers_under, run_lesson
from tests.cluster_harness import wait_until
from tests.kctl.cli import kctl_command, kctl_env, run_kctl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LESSON_TIMEOUT_S = 180.0


def mixed_answers(lesson) -> list[str]:
    """The right answers, except the first, which is wrong."""
    right = [q.right for q in lesson.questions]
    wrong = next(letter for letter in LETTERS[: len(lesson.questions[0].choices)] if letter != right[0])
    return [wrong, *right[1:]]


def test_list_shows_every_lesson_and_no_progress_yet(learner):
    result = run_kctl("learn", "list", "--json", env=learner)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [row["name"] for row in doc["lessons"]] == [lesson.name for lesson in catalogue.LESSONS]
    assert all(not row["completed"] and row["runs"] == 0 for row in doc["lessons"])
    assert doc["progress_file"] == str(Path(learner["KCTL_HOME"]) / "learn.json")
    plain = run_kctl("learn", "list", env=learner)
    assert "isr" in plain.stdout.decode() and "0 of" in plain.stderr


# The schemas and connect lessons have modules of their own (test_learn_schemas, test_learn_connect),
# which check their outcomes too.
OWN_MODULES = ("schemas", "connect")


@pytest.mark.parametrize(
    "name", [lesson.name for lesson in catalogue.LESSONS if lesson.name not in OWN_MODULES]
)
def test_a_lesson_runs_on_real_brokers_and_writes_its_class_notes(name, learner, tmp_path):
    lesson = catalogue.find(name)
    answers = mixed_answers(lesson)
    notes = tmp_path / f"{name}.md"
    text = run_lesson(name, ",".join(answers), learner, notes, LESSON_TIMEOUT_S)
    assert brokers_under(tmp_path) == []
    for number, (ask, given) in enumerate(zip(lesson.questions, answers), 1):
        assert f"**Question {number}.** {ask.question}" in text
        verdict = "right" if given == ask.right else "wrong"
        assert f"Answer given: **{given}** ({verdict}). Right answer: **{ask.right})" in text
    checks = text.count("**Check (✔ held):**")
    assert checks >= 1 and "did NOT hold" not in text
    assert f"Predictions: {len(answers) - 1} of {len(answers)} right." in text
    assert "`kctl watch`" in text and ("PARTITION" in text or "GROUP" in text)
    progress = json.loads(run_kctl("learn", "list", "--json", env=learner).stdout)
    mine = next(row for row in progress["lessons"] if row["name"] == name)
    assert mine["completed"] and mine["runs"] == 1 and mine["best_score"] == len(answers) - 1


def test_answers_that_do_not_fit_the_lesson_are_refused_before_a_cluster_starts(learner, tmp_path):
    too_few = run_kctl("learn", "run", "isr", "--answers", "a", env=learner)
    assert too_few.returncode == 2 and "asks 3 question(s); --answers gave 1" in too_few.stderr
    no_such = run_kctl("learn", "run", "isr", "--answers", "a,z,b", env=learner)
    assert no_such.returncode == 2 and "answer 2 is 'z'" in no_such.stderr
    unknown = run_kctl("learn", "run", "no-such-lesson", "--auto", env=learner)
    assert unknown.returncode == 4 and "the lessons are: partitions, offsets, isr" in unknown.stderr
    both = run_kctl("learn", "run", "isr", "--auto", "--answers", "a,b,b", env=learner)
    assert both.returncode == 2
    assert list((tmp_path / "tmp").iterdir()) == []


def test_ctrl_c_in_the_middle_of_a_lesson_stops_its_cluster(learner, tmp_path):
    proc = subprocess.Popen(
        kctl_command("learn", "run", "partitions", "--auto"),
        env=kctl_env(learner),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: brokers_under(tmp_path), 60, "the lesson's broker")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err.decode()
    assert brokers_under(tmp_path) == []
    assert list((tmp_path / "tmp").iterdir()) == []
