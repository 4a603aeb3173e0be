"""Crash-safe small files: Kafka's checkpoint format written atomically.

A checkpoint must never be seen half-written: after a crash it is either the
old content or the new one. Writing a temp file, fsyncing it, renaming it over
the old one and fsyncing the directory (so the rename itself is durable) gives
exactly that on Linux.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".tmp"


def fsync_directory(directory: Path) -> None:
    """Make creations, renames and deletions inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file; with
    ``durable`` False the new content may still be lost to a power failure (not to a killed
    process), for files whose content can be rebuilt."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    with open(temp, "wb") as file:
        file.write(data)
        if durable:
            file.flush()
            os.fsync(file.fileno())
    os.replace(temp, path)
    if durable:
        fsync_directory(path.parent)


class CheckpointFile:
    """Kafka's text checkpoint: a version line, an entry count, one line per entry.

    Used for ``leader-epoch-checkpoint`` (``epoch startOffset`` lines) and the
    recovery point. A missing or malformed file reads as None: every
    checkpoint we keep can be rebuilt from the log, so a damaged one costs a
    rebuild, never a refusal to start.
    """

    def __init__(self, path: Path, version: int = 0, durable: bool = True) -> None:
        self.path = path
        self.version = version
        self.durable = durable

    def write(self, entries: Iterable[Sequence[object]]) -> None:
        lines = [" ".join(str(field) for field in entry) for entry in entries]
        text = "\n".join([str(self.version), str(len(lines)), *lines]) + "\n"
        write_atomically(self.path, text.encode(), self.durable)

    def read(self) -> list[list[str]] | None:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return None
        try:
            if int(lines[0]) != self.version or int(lines[1]) != len(lines) - 2:
                raise ValueError("version or entry count does not match")
        except (IndexError, ValueError) as error:
            log.warning("ignoring malformed checkpoint %s: %s", self.path, error)
            return None
        return [line.split() for line in lines[2:]]
