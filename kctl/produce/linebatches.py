"""Where `kctl produce --transactional-id` cuts its input into transactions.

With --txn-size N a transaction is every N lines. Without it, a transaction is the input
that is ready at once: what one wait for input returns, plus whatever more is already
waiting, up to READY_LIMIT bytes. A fast pipe (`seq 1000000 | ...`) thus gives transactions
of about a pipe buffer (64 KiB on Linux: the writer refills it while a commit runs), a file
gives READY_LIMIT, a person typing gets one per line (or per paste), and kctl never holds
records back waiting for more input. Cutting happens per chunk, not per line, so the
per-record loop stays as cheap as without transactions.
"""

from __future__ import annotations

import select
from collections.abc import Iterable, Iterator
from io import BufferedIOBase
from itertools import chain, islice

READY_LIMIT = 1024 * 1024  # bytes of input per transaction at most, without --txn-size
READ_SIZE = 64 * 1024


def batches(stream: BufferedIOBase, size: int | None) -> Iterator[Iterable[bytes]]:
    """Every `size` lines, or (None) the input ready at once."""
    return ready(stream) if size is None else sized(stream, size)


def sized(stream: BufferedIOBase, size: int) -> Iterator[Iterable[bytes]]:
    """`size` lines at a time, read lazily; each batch must be used up before the next."""
    lines = iter(stream)
    for first in lines:
        yield chain((first,), islice(lines, size - 1))


def ready(stream: BufferedIOBase, limit: int = READY_LIMIT) -> Iterator[list[bytes]]:
    """The complete lines of input ready at once (a line split across reads goes with its end)."""
    tail = b""
    while True:
        chunks = [tail]
        chunk = stream.read1(READ_SIZE)  # blocks until there is input, or the end
        size = len(chunk)
        while chunk:
            chunks.append(chunk)
            if size >= limit or not _waiting(stream):
                break
            chunk = stream.read1(READ_SIZE)
            size += len(chunk)
        lines = b"".join(chunks).split(b"\n")
        tail = lines.pop()
        if lines:
            yield lines
        if not chunk:  # end of input
            if tail:
                yield [tail]
            return


def _waiting(stream: BufferedIOBase) -> bool:
    """Whether more input can be read without blocking (always, for a regular file)."""
    readable, _, _ = select.select([stream], [], [], 0)
    return bool(readable)
