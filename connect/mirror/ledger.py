"""A micro-batch handler's note in its query's checkpoint, written before the batch's effects:
Spark replays only the last batch it did not commit, so a replay finds the note of its first
attempt and acts on what that attempt saw, not on what the attempt itself changed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def noted(path: Path, batch_id: int, note: Callable[[], Any]) -> Any:
    """The note of `batch_id`: the one recorded by an earlier attempt, else `note()`, kept."""
    try:
        recorded = json.loads(path.read_text())
        if recorded["batch"] == batch_id:
            return recorded["note"]
    except FileNotFoundError:
        pass
    found = note()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    with open(partial, "w") as handle:
        json.dump({"batch": batch_id, "note": found}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(path)
    return found
