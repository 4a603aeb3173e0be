"""The metadata log: `state/metadata/`, append-only segments of metadata records and the
snapshots (`.checkpoint`) that bound how much of it a reader replays (KRaft's
`__cluster_metadata` and its snapshots).

    00000000000000000000.log          records from offset 0, framed (see records.py)
    00000000000000041234.checkpoint   the image after offset 41233, as JSON
    00000000000000041234.log          records from offset 41234 on

Writers append under the state directory's write lock, after catching up, and fsync before
they let go. Every SNAPSHOT_RECORDS records the writer also snapshots its image and starts a
new segment; segments and snapshots older than that snapshot are deleted. A reader follows
the log from where it stopped, so it reads only what is new; a reader whose segment was
deleted under it starts again from the newest snapshot.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from brokerd.atomic_file import atomic_write, fsync_directory
from brokerd.metadata import records
from brokerd.metadata.image import MetadataDelta, MetadataImage

# Told of each record, as stored (see records.LogEntry.to_json), just before it is applied
# (with the image as it was), and of a snapshot just after it was loaded (as
# {"type": SNAPSHOT_LOADED, "offset": ...}).
Observer = Callable[[dict[str, Any], MetadataImage], None]
SNAPSHOT_LOADED = "SnapshotLoaded"

SNAPSHOT_RECORDS = 50_000
# A directory changed within the same clock tick as a listing keeps its mtime: a listing
# is trusted to stand for the directory only once its mtime is older than this.
MTIME_SETTLED_NS = 1_000_000_000
_DIGITS = 20


def _name(offset: int, suffix: str) -> str:
    return f"{offset:0{_DIGITS}d}{suffix}"


class MetadataLog:
    """One reader-writer of the metadata log, with the image it has applied so far and,
    once asked (take_delta), the delta since it was last asked."""

    def __init__(self, directory: Path, observer: Observer | None = None):
        self.dir = Path(directory)
        self._observer = observer
        self.image = MetadataImage()
        self._untaken: MetadataDelta | None = None  # None: take_delta was never called
        self._segment: int | None = None  # base offset of the segment being read
        self._position = 0  # bytes of it applied
        self._snapshot_offset = -1
        self._listing_mtime_ns: int | None = None  # the directory as of the last listing, if settled

    def exists(self) -> bool:
        return self.dir.is_dir()

    def create(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)

    def _bases(self, suffix: str) -> list[int]:
        return sorted(
            int(p.name[:_DIGITS]) for p in self.dir.glob(f"*{suffix}") if p.name[:_DIGITS].isdigit()
        )

    # -- reading ---------------------------------------------------------------------------
    def catch_up(self) -> MetadataImage:
        """Apply every whole record written since the last call; returns the image."""
        if self._nothing_new():
            return self.image
        while True:
            self._note_listing()
            segments = self._bases(".log")
            if self._segment is None and not segments and not self._bases(".checkpoint"):
                return self.image  # nothing written yet
            if self._segment is None or self._segment not in segments:
                self._restart(segments)
                segments = self._bases(".log")
                if self._segment is None:
                    return self.image
            path = self.dir / _name(self._segment, ".log")
            try:
                data = path.read_bytes() if self._position == 0 else _read_from(path, self._position)
            except FileNotFoundError:
                continue  # deleted by a snapshot a moment ago: restart from it
            documents, consumed = records.decode(data)
            self._apply(documents)
            self._position += consumed
            later = [b for b in segments if b > self._segment]
            if not later or consumed < len(data):
                return self.image  # at the end, or before a torn or half-written frame
            self._segment, self._position = later[0], 0

    def _apply(self, documents: list[dict[str, Any]]) -> None:
        """Replay the records into a delta and take the image it makes; an observer is told
        of each record against the image before it, so each is a delta of its own."""
        if not documents:
            return
        if self._observer is None:
            self._replay([records.LogEntry.from_json(doc) for doc in documents])
            return
        for doc in documents:
            entry = records.LogEntry.from_json(doc)
            if entry.offset > self.image.offset:
                self._observer(doc, self.image)
            self._replay([entry])

    def _replay(self, entries: list[records.LogEntry]) -> None:
        delta = MetadataDelta(self.image)
        for entry in entries:
            delta.replay(entry)
        self.image = delta.apply()
        if self._untaken is not None:
            self._untaken.extend(delta)

    def take_delta(self) -> MetadataDelta:
        """The delta since the last call, with the records applied so far (full the first
        time: a taker starts from everything)."""
        taken = self._untaken if self._untaken is not None else MetadataDelta(self.image, full=True)
        self._untaken = MetadataDelta(self.image)
        return taken

    def _nothing_new(self) -> bool:
        """Whether the log is as this reader left it, at the cost of two stats instead of a
        listing: no segment or snapshot created or deleted since the last listing (the
        directory's mtime) and nothing appended to the segment being read (its size). Every
        broker asks this ten times a second."""
        if self._listing_mtime_ns is None:
            return False
        try:
            changed = os.stat(self.dir).st_mtime_ns != self._listing_mtime_ns
            if self._segment is not None:
                changed = (
                    changed or os.stat(self.dir / _name(self._segment, ".log")).st_size != self._position
                )
        except FileNotFoundError:
            return False
        return not changed

    def _note_listing(self) -> None:
        """Remember the directory's mtime as of the listing about to be made, once it is old
        enough (MTIME_SETTLED_NS) that a later change cannot carry the same timestamp."""
        try:
            mtime = os.stat(self.dir).st_mtime_ns
        except FileNotFoundError:
            mtime = None
        settled = mtime is not None and time.time_ns() - mtime > MTIME_SETTLED_NS
        self._listing_mtime_ns = mtime if settled else None

    def _restart(self, segments: list[int]) -> None:
        """Start over from the newest snapshot (or the first segment when there is none)."""
        snapshots = self._bases(".checkpoint")
        self.image = MetadataImage()
        if snapshots:
            doc = json.loads((self.dir / _name(snapshots[-1], ".checkpoint")).read_bytes())
            self.image = MetadataImage.from_snapshot(doc)
            self._snapshot_offset = self.image.offset
            if self._observer is not None:
                self._observer({"type": SNAPSHOT_LOADED, "offset": self.image.offset}, self.image)
        if self._untaken is not None:
            self._untaken = MetadataDelta(self.image, full=True)
        self._segment = (
            next((b for b in segments if b > self.image.offset), None)
            if snapshots
            else (segments[0] if segments else None)
        )
        if self._segment is None and segments:
            self._segment = segments[-1]
        self._position = 0

    # -- writing (the caller holds the state directory's write lock) -------------------------
    def append(self, new_records: Sequence[records.MetadataRecord], controller_epoch: int | None) -> None:
        """Append records after the image's last offset, stamped (their offsets, the
        controller epoch that writes them, None for what any broker writes, and the time),
        fsync, and apply them. A torn tail beyond what catch_up could read is cut off first."""
        if not new_records:
            return
        self.catch_up()
        if self._segment is None:
            self._segment, self._position = self.image.offset + 1, 0
        path = self.dir / _name(self._segment, ".log")
        now = round(time.time(), 3)
        entries = [
            records.LogEntry(offset, controller_epoch, now, record)
            for offset, record in enumerate(new_records, start=self.image.offset + 1)
        ]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, self._position)  # a torn tail, if any, goes
            os.lseek(fd, self._position, os.SEEK_SET)
            os.write(fd, b"".join(records.encode(entry) for entry in entries))
            os.fsync(fd)
        finally:
            os.close(fd)
        self.catch_up()
        if self.image.offset - max(self._snapshot_offset, self._segment - 1) >= SNAPSHOT_RECORDS:
            self.snapshot()

    def snapshot(self) -> None:
        """Write the image as a checkpoint, start a new segment after it, and delete the
        segments and snapshots it makes redundant."""
        offset = self.image.offset
        next_base = offset + 1
        atomic_write(
            self.dir / _name(next_base, ".checkpoint"),
            json.dumps(self.image.to_snapshot(), separators=(",", ":")).encode(),
        )
        (self.dir / _name(next_base, ".log")).touch()
        fsync_directory(self.dir)
        for base in self._bases(".log"):
            if base < next_base:
                (self.dir / _name(base, ".log")).unlink(missing_ok=True)
        for base in self._bases(".checkpoint"):
            if base < next_base:
                (self.dir / _name(base, ".checkpoint")).unlink(missing_ok=True)
        self._segment, self._position, self._snapshot_offset = next_base, 0, offset


def _read_from(path: Path, position: int) -> bytes:
    """The bytes of ``path`` after ``position``; b"" when nothing is new (one stat)."""
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size <= position:
            return b""
        file.seek(position)
        return file.read()
