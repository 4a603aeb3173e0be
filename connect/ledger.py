"""A connector's own small records of progress in its checkpoint directory (where a sink's
batch began in its file, where a batch's dead letters began in their topic): one JSON
document, replaced atomically, so a crash leaves the old record or the new one, never half."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read(path: Path) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return found


def write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    with open(partial, "w") as handle:
        json.dump(document, handle)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(path)
