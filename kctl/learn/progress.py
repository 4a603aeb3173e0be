"""The learner's progress: which lessons they completed, and their predictions' scores.

Kept in `learn.json` in kctl's own directory (--dir's default: $KCTL_HOME, else ~/.kctl), beside
the local cluster's files and untouched by them, so `kctl learn list` can say where a learner
stands. A lesson is completed when it ran to its end with every check holding on the real
cluster; the score is how many predictions were right (runs with `--auto` ask nobody and
leave the scores alone).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from brokerd.atomic_file import atomic_write
from kctl.kafka.bootstrap import resolve_cluster_dir
from kctl.learn.lesson import Run

FILE_NAME = "learn.json"


def path() -> Path:
    return resolve_cluster_dir(None) / FILE_NAME


def load() -> dict[str, dict]:
    """Lesson name -> its record ({} before the first lesson, or from an unreadable file)."""
    try:
        doc = json.loads(path().read_text())
        lessons = doc.get("lessons", {})
        return {str(k): dict(v) for k, v in lessons.items() if isinstance(v, dict)}
    except (FileNotFoundError, ValueError, AttributeError):
        return {}


def record(run: Run) -> dict:
    """Add one run of a lesson to the learner's progress; returns the lesson's record."""
    lessons = load()
    mine = lessons.get(run.lesson.name, {})
    mine["runs"] = int(mine.get("runs", 0)) + 1
    mine["completed"] = bool(mine.get("completed")) or run.passed
    mine["last_run"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run.started))
    if run.mode != "auto" and run.answered and run.finished:
        mine["questions"] = len(run.answered)
        mine["last_score"] = run.score
        mine["best_score"] = max(int(mine.get("best_score", 0)), run.score)
    lessons[run.lesson.name] = mine
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, (json.dumps({"lessons": lessons}, indent=1, sort_keys=True) + "\n").encode())
    return mine
